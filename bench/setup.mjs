// What every benchmark starts from: a throwaway PostGIS, a `bench` database migrated with the
// CLI, an editor account, and SQL seeding of sources whose ids are src_ + the row number padded
// to 22 digits (valid base62), so load generators and pgbench pick existing rows without a lookup.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgis } from '../scripts/postgis.mjs'

export const PASSWORD = 'bench password 1234'
export const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-48bytes!!'

/** node's arguments for the service exactly as `npm start` runs it (its flags, then dist/main.cjs). */
export const SERVICE_ARGS = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start.split(/\s+/).slice(1)
/** The same flags alone. */
export const SERVICE_FLAGS = SERVICE_ARGS.filter((a) => a.startsWith('--'))

/** A new directory under the system's temporary one, removed when the process exits. */
export function tempDir (prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export function freePort () {
  return new Promise((resolve) => {
    const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

/** Starts the cluster (stopped on exit) and returns { url, env, db, accountId, seed }. */
export async function benchDatabase (log) {
  // BENCH_DATABASE_URL: a `bench` database an earlier run left (scripts that seed a million rows
  // check what is there); it is migrated, and its account kept.
  let url = process.env.BENCH_DATABASE_URL
  if (url === undefined) {
    const cluster = await startPostgis({ log })
    process.on('exit', () => cluster.stop())
    url = cluster.url.replace(/\/postgres$/, '/bench')
    const admin = new pg.Client({ connectionString: cluster.url }); await admin.connect()
    await admin.query('CREATE DATABASE bench'); await admin.end()
  }
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
  const env = { ...process.env, DATABASE_URL: url }
  delete env.DATA_DIR
  execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env, stdio: 'inherit' })
  try {
    execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'inherit', 'inherit'] })
  } catch (err) {
    if (process.env.BENCH_DATABASE_URL === undefined) throw err
  }
  const db = new pg.Client({ connectionString: url }); await db.connect()
  const accountId = (await db.query(`SELECT id FROM accounts WHERE email = 'bench@example.org'`)).rows[0].id
  // `period`: SQL for each row's tstzrange, in terms of its number n. `triggers: false` seeds
  // with the triggers off (session_replication_role = replica), many times faster: for benches
  // that read, whose disjoint squares have no conflicts to find and whose seed's versions, events
  // and tile counters are not what they measure.
  async function seed (from, count, { period = "'[2024-01-01Z,2024-02-01Z)'", triggers = true } = {}) {
    const t0 = Date.now()
    if (!triggers) await db.query('SET session_replication_role = replica')
    for (let start = from; start < from + count; start += 100_000) {
      const end = Math.min(start + 100_000, from + count) - 1
      await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
        SELECT 'src_' || lpad(n::text, 22, '0'), 'seed-' || n, 'bench', $3::uuid,
          ST_MakeEnvelope((n % 3000) * 0.01 - 15, (n / 3000 % 3000) * 0.01 - 15, (n % 3000) * 0.01 - 14.995, (n / 3000 % 3000) * 0.01 - 14.995, 4326),
          ${period}
        FROM generate_series($1::bigint, $2::bigint) AS n`, [start, end, accountId])
    }
    if (!triggers) await db.query('RESET session_replication_role')
    log(`seeded ${count} rows from ${from} in ${Date.now() - t0} ms`)
  }
  return { url, env, db, accountId, seed }
}
