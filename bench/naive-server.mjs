// The framework floor: a minimal Fastify + pg server doing the same SQL as the service for GET,
// POST (one or many features) and DELETE, conflicts included (read with each GET, read back after
// each POST), an items page with a bbox (the service's own statement, countedPageQuery) and a
// conflict's stance change (the service's own statement, updateStanceQuery), with no validation,
// no auth and no rate limits.
// Usage: DATABASE_URL=… PORT=… ORG=… ACCOUNT_ID=… node bench/naive-server.mjs
import Fastify from 'fastify'
import pg from 'pg'
import { multiPolygonEwkb } from '../dist/db/ewkb.js'
import { compileByShape, queryBuilder } from '../dist/db/compiled-query.js'
import { LIST_INPUT_SHAPE_KEYS, countedPageQuery } from '../dist/sources/sources.listing.js'
import { searchBoxes } from '../dist/sources/search-box.js'
import { updateStanceQuery } from '../dist/conflicts/conflicts.repository.js'
import { randomBytes } from 'node:crypto'

// NAIVE_PG_OPTIONS: more startup options (bench/conflicts.mjs turns the conflict triggers off
// with -c session_replication_role=replica: the naive handler checks nothing).
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_MAX ?? 10), options: `-c TimeZone=UTC ${process.env.NAIVE_PG_OPTIONS ?? ''}`.trim() })
const org = process.env.ORG
const accountId = process.env.ACCOUNT_ID
const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024, routerOptions: { ignoreTrailingSlash: true } })

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const newId = () => 'src_' + Array.from(randomBytes(22), (b) => ALPHABET[b % 62]).join('')
const iso = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`

// A source's conflicts as the service reads them (sql/008's pairs, largest overlap first, the
// first 100 and the total beyond): since conflicts, GET and POST answer with them, and a
// baseline that left them out would not be doing the same work.
const conflicts = (id) => `(SELECT CASE WHEN count(*) > 0 THEN json_build_object(
    'list', json_agg(json_build_array(c.other_id, c.overlap_m2, c.overlap_ratio,
      to_char(lower(c.overlap_period) AT TIME ZONE 'UTC', ${iso}), to_char(upper(c.overlap_period) AT TIME ZONE 'UTC', ${iso})) ORDER BY c.overlap_m2 DESC, c.other_id),
    'total', CASE WHEN count(*) > 100 THEN (SELECT count(*) FROM source_conflict_pairs AS p WHERE p.source_id = ${id}) END) END
  FROM (SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p
    WHERE p.source_id = ${id} ORDER BY p.overlap_m2 DESC, p.other_id LIMIT 101) AS c) AS "conflicts"`
// NAIVE_CONFLICTS=off: no conflicts read, with a GET or after a POST (bench/conflicts.mjs: the
// handler that checks nothing, its triggers off too).
const withConflicts = process.env.NAIVE_CONFLICTS !== 'off'
const listed = (c) => c === null ? [] : c.list.slice(0, 100).map(([id, m2, ratio, start, end]) => ({ id, overlap_m2: m2, overlap_ratio: ratio, overlap_start: start, overlap_end: end }))

app.get('/sources', async (req, reply) => {
  const { rows } = await pool.query(`select "id", "feature_id", "organisation", ST_AsGeoJSON("geom", 15) as "geometry",
    to_char(lower("period") AT TIME ZONE 'UTC', ${iso}) as "start_at", to_char(upper("period") AT TIME ZONE 'UTC', ${iso}) as "end_at",
    to_char("created_at" AT TIME ZONE 'UTC', ${iso}) as "created_at", "area_m2"${withConflicts ? `, ${conflicts('s.id')}` : ''}
    from "sources" as s where "id" = $1 and "organisation" = $2`, [req.query.id, org])
  if (rows.length === 0) return reply.code(404).send({ status: 404 })
  const r = rows[0]
  const list = listed(r.conflicts ?? null)
  return { type: 'Feature', id: r.id, geometry: JSON.parse(r.geometry), properties: { feature_id: r.feature_id, start_at: r.start_at, end_at: r.end_at, created_at: r.created_at, organisation: r.organisation, area_m2: r.area_m2, conflict: list.length > 0, conflicts: list, ...(r.conflicts?.total != null ? { conflicts_total: Number(r.conflicts.total) } : {}) } }
})

app.post('/sources', async (req, reply) => {
  const fs = req.body.features
  const ids = fs.map(newId)
  await pool.query(`
    INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT t.id, t.feature_id, $5, $6::uuid, t.geom, tstzrange(t.start_at, t.end_at, '[)')
    FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), ST_Dump($7::bytea::geometry), unnest($3::timestamptz[]), unnest($4::timestamptz[]))
      WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, ord)`,
  [ids, fs.map((f) => f.id), fs.map((f) => f.properties.start_at), fs.map((f) => f.properties.end_at), org, accountId, multiPolygonEwkb(fs.map((f) => f.geometry.coordinates))])
  // The conflicts the triggers recorded, for the answer (as the service's 201 lists them).
  const { rows } = withConflicts ? await pool.query(`select t.id, ${conflicts('t.id')} from unnest($1::text[]) as t(id)`, [ids]) : { rows: [] }
  const found = new Map(rows.map((r) => [r.id, listed(r.conflicts).map((c) => c.id)]))
  return reply.code(201).send({ sources: ids.map((id, i) => ({ id, feature_id: fs[i].id, conflicts: found.get(id) ?? [] })) })
})

app.delete('/sources', async (req, reply) => {
  const { rowCount } = await pool.query('delete from "sources" where "id" = $1 and "organisation" = $2', [req.query.id, org])
  return rowCount ? { message: 'deleted' } : reply.code(404).send({ status: 404 })
})

// A first page with a bbox: the statement the service runs for it (prepared, as the service's
// are), its Features joined into a FeatureCollection with the counts and a next link.
const itemsQuery = compileByShape((input) => countedPageQuery(queryBuilder, input), LIST_INPUT_SHAPE_KEYS)
app.get('/collections/sources/items', async (req, reply) => {
  const [w, s, e, n] = String(req.query.bbox).split(',').map(Number)
  const limit = Number(req.query.limit ?? 10)
  const q = itemsQuery({ scope: { organisation: org }, filter: { boxes: searchBoxes(w, s, e, n) }, page: { sort: [{ field: 'id', descending: false }], limit }, cap: 100_000 })
  const { rows: [page] } = await pool.query({ name: 'items', text: q.sql, values: q.parameters })
  const next = page.more ? `,"links":[{"rel":"next","href":"/collections/sources/items?bbox=${req.query.bbox}&limit=${limit}&cursor=${page.last_id}"}]` : ''
  return reply.type('application/geo+json').send(`{"type":"FeatureCollection","numberMatched":${page.matched},"numberReturned":${page.returned}${next},"features":[${page.features ?? ''}]}`)
})

// A stance change of the organisation's side at the version If-Match names (W/"n"), answered with
// the conflict's Feature text as the service answers; 412 when the statement stores nothing (the
// service would then read the parties to say why). Prepared, as the service's statements are.
app.post('/conflicts/:id/stance', async (req, reply) => {
  const version = Number(/"(\d+)"/.exec(req.headers['if-match'] ?? '')?.[1])
  const q = updateStanceQuery({ id: req.params.id, named: null, scope: { organisation: org }, organisation: org, stance: req.body.stance, reason: null, versions: [version], by: `@${accountId}` }).compile(queryBuilder)
  const { rows } = await pool.query({ name: 'stance', text: q.sql, values: q.parameters })
  if (rows.length === 0) return reply.code(412).send({ status: 412 })
  return reply.header('etag', `W/"${rows[0].version}"`).type('application/geo+json').send(rows[0].feature)
})

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
