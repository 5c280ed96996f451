// Issue 34, the ops side: `source purge` erases a source and its versions with an audit entry;
// a backup (the CLI's for the embedded database, pg_dump -Fc / pg_restore for a server) brings
// sources, versions and accounts back equal.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../../src/db/database.js'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, createDatabase, targetConfig, tempDir } from '../helper.js'

const envOf = (target: string): Record<string, string> => backend === 'server' ? { DATABASE_URL: target } : { DATA_DIR: target }
function cli (args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

async function withDb<T> (target: string, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
  try { return await work(db) } finally { await db.destroy() }
}

/** Two sources of one account: the first changed twice (SQL and a named account), the second deleted. */
async function seed (db: Kysely<Database>): Promise<void> {
  const account = await addAccount(db, { email: 'ops@example.org' })
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES
    ('src_000000000000000000001', 'a', 'org-a', ${account.id}, ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 1,0 0))', 4326), tstzrange('2024-01-01', '2025-01-01')),
    ('src_000000000000000000002', 'b', 'org-a', ${account.id}, ST_GeomFromText('POLYGON((0.5 0,1.5 0,1.5 1,0.5 1,0.5 0))', 4326), tstzrange('2024-01-01', '2025-01-01'))`.execute(db)
  await sql`UPDATE sources SET period = tstzrange('2024-01-01', '2026-01-01') WHERE id = 'src_000000000000000000001'`.execute(db)
  await db.transaction().execute(async (trx) => {
    await sql`SELECT set_config('source_registry.account', ${`@${account.id}`}, true)`.execute(trx)
    await sql`UPDATE sources SET feature_id = 'a2' WHERE id = 'src_000000000000000000001'`.execute(trx)
  })
  await sql`DELETE FROM sources WHERE id = 'src_000000000000000000002'`.execute(db)
}

async function snapshot (db: Kysely<Database>) {
  const q = async (text: string) => (await sql.raw<Record<string, unknown>>(text).execute(db)).rows
  return {
    sources: await q('SELECT id, feature_id, organisation, created_by::text, ST_AsText(geom) AS geom, period::text, created_at::text, updated_at::text, version FROM sources ORDER BY id'),
    versions: await q('SELECT source_id, version, operation, recorded_at::text, recorded_by, feature_id, ST_AsText(geom) AS geom, period::text FROM source_versions ORDER BY source_id, version'),
    accounts: await q('SELECT id::text, email, password_hash, role, organisation, disabled FROM accounts ORDER BY email'),
    pairs: await q('SELECT source_id, other_id FROM source_conflict_pairs ORDER BY 1, 2')
  }
}

t.test('the seed is versioned as it should be', async (t) => {
  const target = await createDatabase(t)
  const snap = await withDb(target, async (db) => { await seed(db); return await snapshot(db) })
  t.same(snap.versions.map((v) => [v.source_id, v.version, v.operation]), [
    ['src_000000000000000000001', 1, 'create'], ['src_000000000000000000001', 2, 'update'], ['src_000000000000000000001', 3, 'update'],
    ['src_000000000000000000002', 1, 'create'], ['src_000000000000000000002', 2, 'delete']])
  t.equal(snap.versions[2]?.recorded_by, 'ops@example.org', 'a named account is recorded by its e-mail')
  t.not(snap.versions[1]?.recorded_by, 'ops@example.org', 'a plain SQL write by the role')
  t.equal(snap.sources[0]?.version, 3)
})

t.test('source purge erases the row and its versions and leaves an audit entry', async (t) => {
  const target = await createDatabase(t)
  await withDb(target, seed)
  const named = `SELECT count(*)::int AS n FROM events WHERE subject IN ('src_000000000000000000001', 'src_000000000000000000002') OR data->>'other_id' IN ('src_000000000000000000001', 'src_000000000000000000002')`
  await withDb(target, async (db) => { t.ok((await sql<{ n: number }>`${sql.raw(named)}`.execute(db)).rows[0]?.n, 'the writes left events naming both') })
  const env = envOf(target)
  t.equal(cli(['source', 'purge', '--id', 'src_000000000000000000001'], env).code, 2, '--reason is required')
  const r = cli(['source', 'purge', '--id', 'src_000000000000000000001', '--reason', 'GDPR request 42', '--by', 'alice'], env)
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /purged src_000000000000000000001: the source and 4 versions erased/)
  const gone = cli(['source', 'purge', '--id', 'src_000000000000000000002', '--reason', 'test'], env)
  t.equal(gone.code, 0, 'a deleted source can be purged too')
  t.equal(cli(['source', 'purge', '--id', 'src_000000000000000000009', '--reason', 'x'], env).code, 2, 'no such source')
  await withDb(target, async (db) => {
    const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM source_versions`.execute(db)
    t.equal(left.rows[0]?.n, 0)
    t.equal((await sql<{ n: number }>`${sql.raw(named)}`.execute(db)).rows[0]?.n, 0, 'no event names a purged source')
    const audit = (await sql<{ source_id: string, versions: number, reason: string, purged_by: string }>`SELECT source_id, versions, reason, purged_by FROM source_purges ORDER BY id`.execute(db)).rows
    t.same(audit[0], { source_id: 'src_000000000000000000001', versions: 4, reason: 'GDPR request 42', purged_by: 'alice' })
    t.equal(audit.length, 2)
  })
})

t.test('a backup restores sources, versions and accounts equal', async (t) => {
  const target = await createDatabase(t)
  const before = await withDb(target, async (db) => { await seed(db); return await snapshot(db) })
  const dir = await tempDir(t, 'sr-backup-')
  const file = join(dir, 'backup.tgz')
  let restored: string
  if (backend === 'embedded') {
    const b = cli(['backup', '--to', file], envOf(target))
    t.equal(b.code, 0, b.stderr)
    t.ok(existsSync(file))
    restored = join(dir, 'restored')
    const r = cli(['restore', '--from', file], envOf(restored))
    t.equal(r.code, 0, r.stderr)
    t.equal(cli(['restore', '--from', file], envOf(restored)).code, 2, 'never over an existing database')
  } else {
    const bin = '/usr/lib/postgresql/15/bin'
    if (!t.ok(existsSync(join(bin, 'pg_dump')), 'the PostgreSQL 15 client binaries are installed')) return
    const d = spawnSync(join(bin, 'pg_dump'), ['-Fc', '-f', file, '-d', target], { encoding: 'utf8' })
    t.equal(d.status, 0, d.stderr)
    restored = await createDatabase(t, { empty: true })
    const r = spawnSync(join(bin, 'pg_restore'), ['--no-owner', '--exit-on-error', '-d', restored, file], { encoding: 'utf8' })
    t.equal(r.status, 0, r.stderr)
  }
  const after = await withDb(restored, snapshot)
  t.same(after, before)
  t.ok(after.versions.length === 5 && after.accounts.length === 1 && after.pairs.length === 0)
})

t.test('every version keeps its area as sources had it; an as-of read of one without (older than sql/019) computes it', async (t) => {
  const target = await createDatabase(t)
  await withDb(target, async (db) => {
    await seed(db)
    await sql`UPDATE sources SET geom = ST_GeomFromText('POLYGON((0 0,2 0,2 1,0 1,0 0))', 4326) WHERE id = 'src_000000000000000000001'`.execute(db)
    const { rows } = await sql<{ version: number, stored: number | null, computed: number }>`
      SELECT version, area_m2 AS stored, lonlat_area_m2(geom) AS computed FROM source_versions
      WHERE source_id = 'src_000000000000000000001' ORDER BY version`.execute(db)
    t.ok(rows.length >= 3, `${rows.length} versions`)
    for (const r of rows) t.equal(r.stored, r.computed, `version ${r.version}: the stored area is the polygon's`)
    t.not(rows[0]?.stored, rows.at(-1)?.stored, 'and follows the geometry')
    const deleted = await sql<{ n: number }>`SELECT count(*)::int AS n FROM source_versions WHERE operation = 'delete' AND area_m2 IS NULL`.execute(db)
    t.equal(deleted.rows[0]?.n, 0, 'deletions carry the last area too')
    // A version recorded before the column existed.
    await sql`UPDATE source_versions SET area_m2 = NULL WHERE source_id = 'src_000000000000000000001' AND version = 1`.execute(db)
    const { findVersionAt } = await import('../../src/sources/sources.repository.js')
    const old = await findVersionAt(db, 'src_000000000000000000001', 'all', '9999-01-01T00:00:00Z')
    const first = await sql<{ recorded_at: string }>`SELECT recorded_at::text FROM source_versions WHERE source_id = 'src_000000000000000000001' AND version = 1`.execute(db)
    const v1 = await findVersionAt(db, 'src_000000000000000000001', 'all', String(first.rows[0]?.recorded_at))
    t.equal(v1?.version, 1)
    const area = (v: typeof v1) => (JSON.parse(v?.feature ?? '{}') as { properties?: { area_m2?: number } }).properties?.area_m2
    t.equal(area(v1), rows[0]?.computed, 'a NULL area is computed on read')
    t.equal(area(old), rows.at(-1)?.stored)
  })
})
