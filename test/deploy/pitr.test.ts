// Point-in-time recovery as docs/operations.md describes it: a PostgreSQL server archiving its
// WAL (archive_command cp into a directory), a base backup (pg_basebackup), writes through the
// service before and after a moment T (sources, a second version, a conflict, their events), and
// a restore of the base backup with restore_command and recovery_target_time = T: the restored
// database holds exactly the sources, versions, conflicts and events that existed at T.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../../src/db/database.js'
import { openDatabase } from '../../src/db/open.js'
import { binDir, freePort, uidGid } from '../../scripts/postgis.mjs'
import { backend, build, collection, feature, session, square, targetConfig } from '../helper.js'


const asRoot = process.getuid?.() === 0
function run (cmd: string, args: string[]): string {
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
  const r = spawnSync(file, argv, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr}${r.stdout}`)
  return r.stdout
}

/** What a point in time is made of, as rows an analyst could read. */
async function state (db: Kysely<Database>): Promise<unknown> {
  const { rows } = await sql<{ state: unknown }>`SELECT json_build_object(
    'sources', (SELECT json_agg(json_build_array(id, feature_id, version) ORDER BY id) FROM sources),
    'versions', (SELECT json_agg(json_build_array(source_id, version, operation) ORDER BY source_id, version) FROM source_versions),
    'conflicts', (SELECT json_agg(json_build_array(source_id, other_id) ORDER BY source_id, other_id) FROM source_conflict_pairs),
    'events', (SELECT json_agg(json_build_array(txid::text, seq, type, subject) ORDER BY txid, seq) FROM events)
  ) AS state`.execute(db)
  return rows[0]?.state
}

async function pitr (t: Test): Promise<void> {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'source-registry-pitr-'))
  const archive = join(dir, 'archive')
  const data = join(dir, 'data')
  const base = join(dir, 'base')
  const restored = join(dir, 'restored')
  mkdirSync(archive)
  if (asRoot) { chownSync(dir, ...uidGid('postgres')); chownSync(archive, ...uidGid('postgres')) }
  const ports = { primary: await freePort(), restored: await freePort() }
  const pgCtl = (d: string, ...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', d, '-l', join(dir, `${d === data ? 'primary' : 'restored'}.log`), '-w', '-t', '60', ...args])
  t.teardown(() => {
    for (const d of [data, restored]) { try { pgCtl(d, '-m', 'immediate', 'stop') } catch { /* not running */ } }
    rmSync(dir, { recursive: true, force: true })
  })

  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'])
  // The settings docs/operations.md gives (archive_command as PostgreSQL's documentation has it).
  run('sh', ['-c', `cat >> ${data}/postgresql.auto.conf <<'EOF'
listen_addresses = '127.0.0.1'
port = ${ports.primary}
unix_socket_directories = '${dir}'
wal_level = replica
archive_mode = on
archive_command = 'test ! -f ${archive}/%f && cp %p ${archive}/%f'
EOF`])
  pgCtl(data, 'start')
  run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(ports.primary), '-U', 'postgres', '-D', base, '-c', 'fast'])
  const url = `postgres://postgres@127.0.0.1:${ports.primary}/postgres`
  const migrated = spawnSync(process.execPath, ['dist/cli.js', 'migrate'], { env: { PATH: process.env.PATH, DATABASE_URL: url }, encoding: 'utf8' })
  if (migrated.status !== 0) throw new Error(migrated.stderr)

  const ta = await build(t, {}, { url })
  const editor = await session(ta)
  const post = async (id: string, x: number) => {
    const res = await ta.app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature(id, { coordinates: square(x, 50) })) })
    if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`)
    return (res.json() as { id: string }).id
  }
  const patch = async (id: string, version: number, end: string) => {
    const res = await ta.app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editor.headers, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${version}"` }, payload: { properties: { end_at: end } } })
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
  }

  // Before T: two overlapping sources (a conflict), one of them at version 2.
  const a = await post('before-a', 10)
  await post('before-b', 10.5)
  await patch(a, 1, '2025-01-01T00:00:00Z')
  const atT = await state(ta.db)
  await sleep(50)
  const T = (await sql<{ t: string }>`SELECT clock_timestamp()::text AS t`.execute(ta.db)).rows[0]?.t as string
  await sleep(50)
  // After T: another conflicting source, a third version, a source elsewhere.
  await post('after-c', 10.2)
  await patch(a, 2, '2025-06-01T00:00:00Z')
  await post('after-d', 40)
  t.not(JSON.stringify(await state(ta.db)), JSON.stringify(atT), 'the writes after T changed the state')
  await sql`SELECT pg_switch_wal()`.execute(ta.db)
  // Archived once last_archived_wal has passed the segment switched out.
  for (let i = 0; i < 100; i++) {
    const { rows } = await sql<{ pending: boolean }>`SELECT coalesce(last_archived_wal < pg_walfile_name(pg_current_wal_lsn()), true) AS pending FROM pg_stat_archiver`.execute(ta.db)
    if (rows[0]?.pending === false) break
    await sleep(100)
  }

  // The restore docs/operations.md gives: the base backup, recovery.signal, restore_command, the target.
  run('cp', ['-a', base, restored])
  run('sh', ['-c', `cat >> ${restored}/postgresql.auto.conf <<'EOF'
port = ${ports.restored}
archive_mode = off
restore_command = 'cp ${archive}/%f %p'
recovery_target_time = '${T}'
recovery_target_action = 'promote'
EOF
touch ${restored}/recovery.signal`])
  pgCtl(restored, 'start')
  const { db: restoredDb } = await openDatabase(targetConfig(`postgres://postgres@127.0.0.1:${ports.restored}/postgres`), { poolMax: 1 })
  t.teardown(() => restoredDb.destroy())
  // Recovery ends at the target and the server is promoted; until then it is read-only.
  for (let i = 0; i < 300; i++) {
    const { rows } = await sql<{ r: boolean }>`SELECT pg_is_in_recovery() AS r`.execute(restoredDb)
    if (rows[0]?.r === false) break
    await sleep(100)
  }
  t.same(await state(restoredDb), atT, `restored to ${T}: exactly the sources, versions, conflicts and events that existed then`)
  const sources = (atT as { sources: unknown[] }).sources
  t.equal(sources.length, 2, 'two sources at T')
}

if (backend !== 'server') {
  t.plan(0, 'server backend only (TEST_BACKEND=server): point-in-time recovery is PostgreSQL\'s (the embedded database: see docs/operations.md)')
} else {
  // In a subtest: the root test ends itself once idle after a teardown is added (tap's autoend).
  await t.test('restore to a timestamp between two writes', pitr)
}
