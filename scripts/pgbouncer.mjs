// Throwaway PgBouncer (Debian's 1.18) in transaction pooling mode with its defaults (no
// ignore_startup_parameters), in front of a PostgreSQL server, on a free loopback port; for the
// tests (test/deploy/pgbouncer.test.ts) and the benchmark (bench/pgbouncer.mjs). Like PostgreSQL,
// PgBouncer refuses to run as root: as root it runs as the `postgres` user.
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The pgbouncer binary, or undefined when it is not installed. */
export function pgbouncerBinary () {
  return ['/usr/sbin/pgbouncer', 'pgbouncer'].find((bin) => spawnSync(bin, ['--version']).status === 0)
}

const freePort = () => new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => { const { port } = probe.address(); probe.close(() => resolve(port)) })
})
const listening = (port) => new Promise((resolve) => {
  const s = connect(port, '127.0.0.1').once('connect', () => { s.destroy(); resolve(true) }).once('error', () => resolve(false))
})

/**
 * Starts PgBouncer for every database of the server at `upstream` (a postgres:// URL whose user
 * needs no password). Returns { port, pooled(url), stop() }: pooled() turns a direct URL into the
 * same database through PgBouncer.
 */
export async function startPgBouncer (upstream, { poolSize = 20 } = {}) {
  const bin = pgbouncerBinary()
  if (bin === undefined) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)')
  const server = new URL(upstream)
  const dir = mkdtempSync(join(tmpdir(), 'sr-pgbouncer-'))
  const port = await freePort()
  writeFileSync(join(dir, 'userlist.txt'), `"${decodeURIComponent(server.username)}" ""\n`)
  writeFileSync(join(dir, 'pgbouncer.ini'), `[databases]
* = host=${server.hostname} port=${server.port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = ${poolSize}
`)
  const asRoot = process.getuid?.() === 0
  if (asRoot) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout), 0)
  const child = asRoot
    ? spawn('runuser', ['-u', 'postgres', '--', bin, join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(bin, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d.toString() })
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
  }
  for (let i = 0; !(await listening(port)); i++) {
    if (i > 100 || child.exitCode !== null) { stop(); throw new Error(`pgbouncer did not start: ${stderr}`) }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const pooled = (url) => { const u = new URL(url); u.hostname = '127.0.0.1'; u.port = String(port); return u.toString() }
  return { port, pooled, stop }
}
