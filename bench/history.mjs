// Issue 34: what keeping every version costs. In-process (app.inject, no network), on the
// database of DATABASE_URL or else a new embedded one; every ratio is of two measurements in
// this one run, on the same database. Run after `npm run build`: node bench/history.mjs [N].
//   post     a single-feature POST with the history triggers on, against the same with
//            sources_versions_insert disabled (the write of the release before, on this schema)
//   patch    PATCH of end_at, against the same UPDATE in SQL (same triggers)
//   put500   PUT of a 500-vertex polygon, against the same UPDATE in SQL
//   asof     GET with as_of, against GET by id, over sources with 3 versions each
//   bytes    bytes of source_versions (with its index and TOAST) per version
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { loadConfig } from '../dist/config.js'
import { openDatabase } from '../dist/db/open.js'
import { migrate } from '../dist/db/migrate.js'
import { buildApp } from '../dist/app.js'
import { insertAccount } from '../dist/accounts/accounts.repository.js'
import { hashPassword } from '../dist/accounts/passwords.js'
import { ring } from './bodies.mjs'

const N = Number(process.argv[2] ?? 200)
const dir = process.env.DATABASE_URL === undefined ? await mkdtemp(join(tmpdir(), 'sr-bench-history-')) : undefined
const config = loadConfig({ ...process.env, JWT_SECRET: 'bench-secret-that-is-at-least-32-bytes!', ...(dir !== undefined ? { DATA_DIR: dir } : {}), RATE_LIMIT_MAX: '100000000' })
const { db } = await openDatabase(config, { create: true })
await migrate(db)
const app = await buildApp({ config, db })
await app.ready()
const email = `bench-${Date.now()}@example.org`
await insertAccount(db, { email, passwordHash: await hashPassword('correct horse battery staple'), role: 'editor', organisation: 'bench' })
const token = (await app.inject({ method: 'POST', url: '/token', payload: { email, password: 'correct horse battery staple' } })).json().token
const auth = { authorization: `Bearer ${token}` }

let k = 0
const box = () => { const i = k++; const x = -170 + (i % 3000) * 0.02; const y = 60 + Math.floor(i / 3000) * 0.02; return [[[x, y], [x + 0.01, y], [x + 0.01, y + 0.01], [x, y + 0.01], [x, y]]] }
const feature = (coordinates, id = `b-${k}`, end = '2025-01-01T00:00:00Z') => ({ type: 'Feature', id, properties: { start_at: '2024-01-01T00:00:00Z', end_at: end }, geometry: { type: 'Polygon', coordinates } })
const create = async () => (await app.inject({ method: 'POST', url: '/sources', headers: auth, payload: { type: 'FeatureCollection', features: [feature(box())] } })).json().id

/** Median milliseconds of `n` runs of `fn(i)`. */
async function median (n, fn) {
  const times = []
  for (let i = 0; i < n; i++) { const t0 = process.hrtime.bigint(); await fn(i); times.push(Number(process.hrtime.bigint() - t0) / 1e6) }
  times.sort((a, b) => a - b)
  return times[Math.floor(n / 2)]
}

const out = {}
// post: alternate on and off in rounds, so drift hits both alike.
let on = 0; let off = 0
for (let round = 0; round < 4; round++) {
  on += await median(N / 4, create)
  await sql`ALTER TABLE sources DISABLE TRIGGER sources_versions_insert`.execute(db)
  off += await median(N / 4, create)
  await sql`ALTER TABLE sources ENABLE TRIGGER sources_versions_insert`.execute(db)
}
out.post = { history_ms: on / 4, without_ms: off / 4, ratio_throughput: off / on }

const ids = []
for (let i = 0; i < N; i++) ids.push(await create())
const versionOf = async (id) => (await sql`SELECT version FROM sources WHERE id = ${id}`.execute(db)).rows[0].version
const apiPatch = await median(N, async (i) => {
  const id = ids[i]
  const r = await app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...auth, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${await versionOf(id)}"` }, payload: JSON.stringify({ properties: { end_at: '2025-06-01T00:00:00Z' } }) })
  if (r.statusCode !== 200) throw new Error(r.body)
})
const sqlPatch = await median(N, async (i) => { await sql`UPDATE sources SET period = tstzrange(lower(period), '2025-07-01', '[)') WHERE id = ${ids[i]}`.execute(db) })
out.patch = { api_ms: apiPatch, sql_ms: sqlPatch, ratio_throughput: sqlPatch / apiPatch }

const big = ring(500, 0, 0)
const shifted = (i) => big.map((r) => r.map(([x, y]) => [x - 100 + (i % 100) * 0.01, y - 40 + Math.floor(i / 100) * 0.01]))
const apiPut = await median(N, async (i) => {
  const id = ids[i]
  const r = await app.inject({ method: 'PUT', url: `/sources/?id=${id}`, headers: { ...auth, 'if-match': `W/"${await versionOf(id)}"` }, payload: feature(shifted(i), `p-${i}`) })
  if (r.statusCode !== 200) throw new Error(r.body)
})
const sqlPut = await median(N, async (i) => {
  const wkt = `POLYGON((${shifted(i + N)[0].map(([x, y]) => `${x} ${y}`).join(',')}))`
  await sql`UPDATE sources SET geom = ST_GeomFromText(${wkt}, 4326) WHERE id = ${ids[i]}`.execute(db)
})
out.put500 = { api_ms: apiPut, sql_ms: sqlPut, ratio_throughput: sqlPut / apiPut }

// Each of ids has 4 versions by now (create, PATCH, SQL, PUT, SQL: 5); as_of between them.
const at = new Date(Date.now() - 1).toISOString()
const getById = await median(N, async (i) => { await app.inject({ method: 'GET', url: `/sources/?id=${ids[i]}`, headers: auth }) })
const getAsOf = await median(N, async (i) => { await app.inject({ method: 'GET', url: `/sources/?id=${ids[i]}&as_of=${at}`, headers: auth }) })
out.asof = { get_ms: getById, as_of_ms: getAsOf, ratio_latency: getAsOf / getById }

const size = (await sql`SELECT pg_total_relation_size('source_versions')::float8 AS bytes, (SELECT count(*) FROM source_versions)::float8 AS n`.execute(db)).rows[0]
out.bytes = { per_version: Math.round(size.bytes / size.n), versions: size.n }

console.log(JSON.stringify({ n: N, backend: dir === undefined ? 'server' : 'embedded', ...out }, null, 2))
await app.close()
if (dir !== undefined) await rm(dir, { recursive: true, force: true })
