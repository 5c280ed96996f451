// Throwaway PostGIS cluster for tests and benchmarks: initdb in a temp directory, start on a free
// loopback port, stop and remove on exit. PostgreSQL refuses to run as root, so as root the server
// runs as the `postgres` user.
import { execFileSync, spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdtempSync, rmSync, chownSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function binDir () {
  for (const v of ['17', '16', '15']) {
    const d = `/usr/lib/postgresql/${v}/bin`
    if (existsSync(join(d, 'initdb'))) return d
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('PostgreSQL server binaries not found (apt-get install postgresql-15 postgresql-15-postgis-3)')
  }
}

export function freePort () {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

const asRoot = process.getuid?.() === 0
function run (cmd, args, opts = {}) {
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
  const r = spawnSync(file, argv, { encoding: 'utf8', ...opts })
  if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout}`)
  return r.stdout
}

/** Starts a cluster; returns { url, stop }. `stop` is idempotent. */
export async function startPostgis ({ log = () => {} } = {}) {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'source-registry-pg-'))
  if (asRoot) chownSync(dir, ...uidGid('postgres'))
  const data = join(dir, 'data')
  const port = await freePort()
  log(`initdb ${data}`)
  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'])
  writeFileSync(join(data, 'postgresql.auto.conf'), [
    `listen_addresses = '127.0.0.1'`, `port = ${port}`, `unix_socket_directories = '${dir}'`,
    'fsync = off', 'synchronous_commit = off', 'full_page_writes = off', 'max_connections = 200',
    'shared_buffers = 256MB', ''
  ].join('\n'))
  if (asRoot) chownSync(join(data, 'postgresql.auto.conf'), ...uidGid('postgres'))
  run(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start'])
  log(`PostGIS listening on 127.0.0.1:${port}`)
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    try { run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']) } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true })
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop }
}

/**
 * A streaming replica of a cluster that startPostgis started (its defaults allow it: wal_level
 * replica, and initdb's pg_hba.conf trusts replication connections from 127.0.0.1): a
 * pg_basebackup -R of it, started on a free loopback port of its own. Returns { url, port, start,
 * stopServer, stop }: stopServer stops it (fast shutdown) and start starts it again; stop also
 * removes it and is idempotent.
 */
export async function startReplica (primary, { log = () => {} } = {}) {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'source-registry-replica-'))
  if (asRoot) chownSync(dir, ...uidGid('postgres'))
  const data = join(dir, 'data')
  const port = await freePort()
  log(`pg_basebackup of 127.0.0.1:${primary.port} into ${data}`)
  run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '-c', 'fast'])
  // The copy has the primary's postgresql.auto.conf; later lines win.
  appendFileSync(join(data, 'postgresql.auto.conf'), [`port = ${port}`, `unix_socket_directories = '${dir}'`, ''].join('\n'))
  const start = () => run(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start'])
  const stopServer = () => run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop'])
  start()
  log(`replica listening on 127.0.0.1:${port}`)
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    try { run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']) } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true })
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, start, stopServer, stop }
}

export function uidGid (user) {
  const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }))
  const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }))
  return [uid, gid]
}
