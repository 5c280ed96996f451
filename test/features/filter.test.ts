// CQL2 filters on /collections/sources/items (OGC API – Features Part 3): a table of filters,
// each in its text and its JSON form, gives the sources the same question written by hand in SQL
// gives, over a set with the antimeridian, a polygon with a hole, touching and disjoint areas,
// meeting periods and conflicts; the text parses to the JSON written beside it. Filters combine
// with bbox, datetime, the cursor and an admin's organisation; every bad filter is a 400 naming
// the problem; a fuzz run finds no 500; the queryables and conformance say what is served.
import t from 'tap'
import { sql } from 'kysely'
import { Value } from '@sinclair/typebox/value'
import { ErrorSchema } from '../../src/errors.js'
import { FILTER_LIMITS, checkFilter } from '../../src/features/filters/cql2.js'
import { TEXT_OFFSET, parseCql2Text, parseWhole } from '../../src/features/filters/cql2-text.grammar.js'
import { build, collection, expectError, feature, session } from '../helper.js'
import { propertiesWhere } from '../../src/sources/source-properties.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

const box = (w: number, s: number, size = 0.5) => [[[w, s], [w + size, s], [w + size, s + size], [w, s + size], [w, s]]]
const seedA = [
  // 20 squares on a 5 × 4 grid; starts in months 1-6, ends in months 7-10.
  ...Array.from({ length: 20 }, (_, i) => feature(`g-${i}`, {
    coordinates: box(i % 5, Math.floor(i / 5)), start: `2024-0${1 + (i % 6)}-01T00:00:00Z`, end: `2024-${String(7 + (i % 4)).padStart(2, '0')}-01T00:00:00Z`
  })),
  feature('east-edge', { coordinates: [[[179.5, 0], [180, 0], [180, 1], [179.5, 1], [179.5, 0]]] }),
  feature('west-edge', { coordinates: [[[-180, 0], [-179.5, 0], [-179.5, 1], [-180, 1], [-180, 0]]] }),
  feature('donut', { coordinates: [[[20, 20], [22, 20], [22, 22], [20, 22], [20, 20]], [[20.5, 20.5], [20.5, 21.5], [21.5, 21.5], [21.5, 20.5], [20.5, 20.5]]] }),
  // Touching areas, and periods that meet: [Jan, Mar) and [Mar, May).
  feature('touch-left', { coordinates: box(30, 30, 1), start: '2024-01-01T00:00:00Z', end: '2024-03-01T00:00:00Z' }),
  feature('touch-right', { coordinates: box(31, 30, 1), start: '2024-03-01T00:00:00Z', end: '2024-05-01T00:00:00Z' }),
  feature('clash-1', { coordinates: box(40, 40, 1) }),
  feature('pct%1', { coordinates: box(50, 50) }),
  feature('under_1', { coordinates: box(51, 50) }),
  feature('back\\slash', { coordinates: box(52, 50) }),
  feature('far', { coordinates: box(-100, -50, 0.1), start: '2023-06-01T00:00:00Z', end: '2023-07-01T00:00:00Z' })
]
async function post (headers: Record<string, string>, features: unknown[]): Promise<void> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(...features) })
  if (res.statusCode !== 201) throw new Error(`seeding: ${res.statusCode} ${res.body}`)
}
await post(editorA.headers, seedA)
// Conflicts: clash-2 overlaps clash-1 (same organisation); b-clash overlaps g-0 (another one).
await post(editorA.headers, [feature('clash-2', { coordinates: box(40.5, 40, 1) })])
await post(editorB.headers, [feature('b-clash', { coordinates: box(0.25, 0.25) }), feature('b-far', { coordinates: box(60, 60) })])
// One change, so version and updated_at tell sources apart (issue 34).
await sql`UPDATE sources SET period = period WHERE feature_id = 'far'`.execute(db)
const idOf = async (featureId: string): Promise<string> =>
  (await sql<{ id: string }>`SELECT id FROM sources WHERE feature_id = ${featureId}`.execute(db)).rows[0]?.id as string
const g5 = await idOf('g-5')

const items = (query: Record<string, string>, headers = editorA.headers) =>
  app.inject({ method: 'GET', url: `/collections/sources/items?${new URLSearchParams({ limit: '1000', ...query }).toString()}`, headers })
interface Page { features: Array<{ id: string, properties: { feature_id: string } }>, links: Array<{ rel: string, href: string }>, numberMatched?: number }
async function featureIds (query: Record<string, string>, headers = editorA.headers): Promise<string[]> {
  const res = await items(query, headers)
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
  return (res.json() as Page).features.map((f) => f.properties.feature_id).sort()
}
async function sqlIds (where: string, organisation = 'org-a'): Promise<string[]> {
  const rows = (await sql<{ feature_id: string }>`SELECT feature_id FROM sources WHERE organisation = ${organisation} AND (${sql.raw(where)})`.execute(db)).rows
  return rows.map((r) => r.feature_id).sort()
}

// CQL2 JSON builders.
const p = (property: string) => ({ property })
const op = (name: string, ...args: unknown[]) => ({ op: name, args })
const ts = (timestamp: string) => ({ timestamp })
const date = (d: string) => ({ date: d })
const interval = (a: unknown, b: unknown) => ({ interval: [a, b] })
const period = interval(p('start_at'), p('end_at'))
const bbox = (...n: number[]) => ({ bbox: n })
const polygon = (...rings: number[][][]) => ({ type: 'Polygon', coordinates: rings })
const env = (w: number, s: number, e: number, n: number) => `ST_MakeEnvelope(${w}, ${s}, ${e}, ${n}, 4326)`
const CONFLICT = 'EXISTS (SELECT 1 FROM source_conflict_pairs AS c WHERE c.source_id = sources.id)'
const closed = (text: string) => `lower(period) <= ${text}`

/** [CQL2 text, CQL2 JSON, the same question in SQL on `sources`]. */
const CASES: Array<[string, unknown, string]> = [
  // Comparisons, with numbers, strings, timestamps, dates and booleans.
  ["feature_id = 'g-3'", op('=', p('feature_id'), 'g-3'), "feature_id = 'g-3'"],
  ["feature_id <> 'g-3'", op('<>', p('feature_id'), 'g-3'), "feature_id <> 'g-3'"],
  ['area_m2 > 3e9', op('>', p('area_m2'), 3e9), 'area_m2 > 3e9'],
  ['area_m2 <= 1e9', op('<=', p('area_m2'), 1e9), 'area_m2 <= 1e9'],
  ['area_m2 >= 3000000000 AND area_m2 < 3.06E9', op('and', op('>=', p('area_m2'), 3e9), op('<', p('area_m2'), 3.06e9)), 'area_m2 >= 3e9 AND area_m2 < 3.06e9'],
  ['area_m2 > -0', op('>', p('area_m2'), -0), 'area_m2 > 0'],
  ["start_at < TIMESTAMP('2024-03-01T00:00:00Z')", op('<', p('start_at'), ts('2024-03-01T00:00:00Z')), "lower(period) < '2024-03-01Z'"],
  ["start_at >= DATE('2024-03-01')", op('>=', p('start_at'), date('2024-03-01')), "lower(period) >= '2024-03-01Z'"],
  ["end_at = TIMESTAMP('2024-08-01T00:00:00Z')", op('=', p('end_at'), ts('2024-08-01T00:00:00Z')), "upper(period) = '2024-08-01Z'"],
  ["created_at > TIMESTAMP('2000-01-01T00:00:00.5Z')", op('>', p('created_at'), ts('2000-01-01T00:00:00.5Z')), "created_at > '2000-01-01T00:00:00.5Z'"],
  ["created_at < DATE('2000-01-01')", op('<', p('created_at'), date('2000-01-01')), 'false'],
  ['version > 1', op('>', p('version'), 1), 'version > 1'],
  ['version = 1', op('=', p('version'), 1), 'version = 1'],
  ['updated_at > created_at', op('>', p('updated_at'), p('created_at')), 'updated_at > created_at'],
  ["updated_at >= TIMESTAMP('2000-01-01T00:00:00Z')", op('>=', p('updated_at'), ts('2000-01-01T00:00:00Z')), 'true'],
  ['conflict = true', op('=', p('conflict'), true), CONFLICT],
  ['conflict = FALSE', op('=', p('conflict'), false), `NOT ${CONFLICT}`],
  ['conflict <> true', op('<>', p('conflict'), true), `NOT ${CONFLICT}`],
  ['NOT conflict = true', op('not', op('=', p('conflict'), true)), `NOT ${CONFLICT}`],
  ['true = conflict', op('=', true, p('conflict')), CONFLICT],
  [`id = '${g5}'`, op('=', p('id'), g5), "feature_id = 'g-5'"],
  ["feature_id > 'g-5'", op('>', p('feature_id'), 'g-5'), "feature_id > 'g-5'"],
  ["feature_id = 'pct%1'", op('=', p('feature_id'), 'pct%1'), "feature_id = 'pct%1'"],
  ["feature_id = 'back\\\\slash'", op('=', p('feature_id'), 'back\\slash'), "feature_id = 'back\\slash'"],
  ['"feature_id" = \'far\'', op('=', p('feature_id'), 'far'), "feature_id = 'far'"],
  // Logic: AND, OR, NOT, TRUE and FALSE, with CQL2's (SQL's) three-valued logic.
  ["feature_id = 'g-1' OR feature_id = 'g-2'", op('or', op('=', p('feature_id'), 'g-1'), op('=', p('feature_id'), 'g-2')), "feature_id IN ('g-1', 'g-2')"],
  ["(feature_id = 'g-1' or feature_id = 'g-2') and area_m2 > 0", op('and', op('or', op('=', p('feature_id'), 'g-1'), op('=', p('feature_id'), 'g-2')), op('>', p('area_m2'), 0)), "feature_id IN ('g-1', 'g-2')"],
  ["NOT (feature_id = 'g-1' OR conflict = true)", op('not', op('or', op('=', p('feature_id'), 'g-1'), op('=', p('conflict'), true))), `feature_id <> 'g-1' AND NOT ${CONFLICT}`],
  ['TRUE', true, 'true'],
  ['FALSE', false, 'false'],
  ["NOT FALSE AND feature_id = 'far'", op('and', op('not', false), op('=', p('feature_id'), 'far')), "feature_id = 'far'"],
  ["NOT NOT NOT feature_id = 'far'", op('not', op('not', op('not', op('=', p('feature_id'), 'far')))), "feature_id <> 'far'"],
  // LIKE with %, _ and the escape \.
  ["feature_id LIKE 'g-1%'", op('like', p('feature_id'), 'g-1%'), "feature_id LIKE 'g-1%'"],
  ["feature_id LIKE 'g-_'", op('like', p('feature_id'), 'g-_'), "feature_id LIKE 'g-_'"],
  ["feature_id NOT LIKE 'g-%'", op('not', op('like', p('feature_id'), 'g-%')), "feature_id NOT LIKE 'g-%'"],
  ["feature_id LIKE 'pct\\%%'", op('like', p('feature_id'), 'pct\\%%'), "feature_id LIKE 'pct\\%%'"],
  ["feature_id LIKE '%\\_1'", op('like', p('feature_id'), '%\\_1'), "feature_id = 'under_1'"],
  ["feature_id LIKE 'back\\\\\\\\slash'", op('like', p('feature_id'), 'back\\\\slash'), "feature_id = 'back\\slash'"],
  ["feature_id like '%edge'", op('like', p('feature_id'), '%edge'), "feature_id LIKE '%edge'"],
  // BETWEEN, IN, IS NULL.
  ['area_m2 BETWEEN 3e9 AND 3.06e9', op('between', p('area_m2'), 3e9, 3.06e9), 'area_m2 BETWEEN 3e9 AND 3.06e9'],
  ['area_m2 NOT BETWEEN 1e9 AND 3.06e9', op('not', op('between', p('area_m2'), 1e9, 3.06e9)), 'area_m2 NOT BETWEEN 1e9 AND 3.06e9'],
  ["start_at BETWEEN TIMESTAMP('2024-02-01T00:00:00Z') AND DATE('2024-04-01')", op('between', p('start_at'), ts('2024-02-01T00:00:00Z'), date('2024-04-01')), "lower(period) BETWEEN '2024-02-01Z' AND '2024-04-01Z'"],
  ["feature_id IN ('g-1', 'g-7', 'nope')", op('in', p('feature_id'), ['g-1', 'g-7', 'nope']), "feature_id IN ('g-1', 'g-7')"],
  ["feature_id NOT IN ('g-1', 'g-7')", op('not', op('in', p('feature_id'), ['g-1', 'g-7'])), "feature_id NOT IN ('g-1', 'g-7')"],
  ['area_m2 IN (0, 1)', op('in', p('area_m2'), [0, 1]), 'false'],
  ['feature_id IS NULL', op('isNull', p('feature_id')), 'false'],
  ['feature_id IS NOT NULL', op('not', op('isNull', p('feature_id'))), 'true'],
  ['geometry IS NULL', op('isNull', p('geometry')), 'false'],
  // Spatial functions, with WKT and GeoJSON literals and BBOX (across the antimeridian too).
  ['S_INTERSECTS(geometry, BBOX(0, 0, 1.2, 1.2))', op('s_intersects', p('geometry'), bbox(0, 0, 1.2, 1.2)), `ST_Intersects(geom, ${env(0, 0, 1.2, 1.2)})`],
  ['S_INTERSECTS(geometry, BBOX(179, 0, -179, 1))', op('s_intersects', p('geometry'), bbox(179, 0, -179, 1)), `ST_Intersects(geom, ${env(179, 0, 180, 1)}) OR ST_Intersects(geom, ${env(-180, 0, -179, 1)})`],
  ['S_INTERSECTS(geometry, BBOX(179.9, 0.5, -179.9, 0.6))', op('s_intersects', p('geometry'), bbox(179.9, 0.5, -179.9, 0.6)), "feature_id IN ('east-edge', 'west-edge')"],
  ['S_DISJOINT(geometry, BBOX(179, -1, -179, 2))', op('s_disjoint', p('geometry'), bbox(179, -1, -179, 2)), "feature_id NOT IN ('east-edge', 'west-edge')"],
  ['S_INTERSECTS(geometry, BBOX(0, 0, 0, 10, 1, 99))', op('s_intersects', p('geometry'), bbox(0, 0, 0, 10, 1, 99)), `ST_Intersects(geom, ${env(0, 0, 10, 1)})`],
  ['S_INTERSECTS(geometry, POINT(21 21))', op('s_intersects', p('geometry'), { type: 'Point', coordinates: [21, 21] }), 'false'],
  ['S_INTERSECTS(geometry, POINT Z(20.25 20.25 100))', op('s_intersects', p('geometry'), { type: 'Point', coordinates: [20.25, 20.25, 100] }), "feature_id = 'donut'"],
  ['S_WITHIN(geometry, POLYGON((-1 -1, 3 -1, 3 3, -1 3, -1 -1)))', op('s_within', p('geometry'), polygon([[-1, -1], [3, -1], [3, 3], [-1, 3], [-1, -1]])), `ST_Within(geom, ${env(-1, -1, 3, 3)})`],
  ['S_CONTAINS(geometry, POINT(0.25 0.25))', op('s_contains', p('geometry'), { type: 'Point', coordinates: [0.25, 0.25] }), "feature_id = 'g-0'"],
  ['S_TOUCHES(geometry, POLYGON((31 30, 32 30, 32 31, 31 31, 31 30)))', op('s_touches', p('geometry'), polygon([[31, 30], [32, 30], [32, 31], [31, 31], [31, 30]])), "feature_id = 'touch-left'"],
  ['S_EQUALS(geometry, POLYGON((31 31, 31 30, 32 30, 32 31, 31 31)))', op('s_equals', p('geometry'), polygon([[31, 31], [31, 30], [32, 30], [32, 31], [31, 31]])), "feature_id = 'touch-right'"],
  ['S_OVERLAPS(geometry, BBOX(40.25, 40.25, 40.75, 40.75))', op('s_overlaps', p('geometry'), bbox(40.25, 40.25, 40.75, 40.75)), "feature_id = 'clash-2'"],
  ['S_CROSSES(geometry, LINESTRING(19 21, 23 21))', op('s_crosses', p('geometry'), { type: 'LineString', coordinates: [[19, 21], [23, 21]] }), "feature_id = 'donut'"],
  ['S_INTERSECTS(geometry, MULTIPOLYGON(((0 0, 0.1 0, 0.1 0.1, 0 0.1, 0 0)), ((4.1 3.1, 4.2 3.1, 4.2 3.2, 4.1 3.2, 4.1 3.1))))',
    op('s_intersects', p('geometry'), { type: 'MultiPolygon', coordinates: [[[[0, 0], [0.1, 0], [0.1, 0.1], [0, 0.1], [0, 0]]], [[[4.1, 3.1], [4.2, 3.1], [4.2, 3.2], [4.1, 3.2], [4.1, 3.1]]]] }), "feature_id IN ('g-0', 'g-19')"],
  ['S_INTERSECTS(geometry, MULTIPOINT((0.25 0.25), (1.25 1.25)))', op('s_intersects', p('geometry'), { type: 'MultiPoint', coordinates: [[0.25, 0.25], [1.25, 1.25]] }), "feature_id IN ('g-0', 'g-6')"],
  ['S_INTERSECTS(geometry, MULTILINESTRING((0 0.25, 2 0.25), (50 50, 60 60)))', op('s_intersects', p('geometry'), { type: 'MultiLineString', coordinates: [[[0, 0.25], [2, 0.25]], [[50, 50], [60, 60]]] }), "feature_id IN ('g-0', 'g-1', 'g-2', 'pct%1')"],
  ['S_INTERSECTS(geometry, GEOMETRYCOLLECTION(POINT(30.5 30.5), LINESTRING(-100 -50, -99 -49)))',
    op('s_intersects', p('geometry'), { type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [30.5, 30.5] }, { type: 'LineString', coordinates: [[-100, -50], [-99, -49]] }] }), "feature_id IN ('touch-left', 'far')"],
  ['S_INTERSECTS(geometry, POLYGON((-1 -1, 5 -1, 5 5, -1 5, -1 -1), (0.75 0.75, 2.75 0.75, 2.75 2.75, 0.75 2.75, 0.75 0.75)))',
    op('s_intersects', p('geometry'), polygon([[-1, -1], [5, -1], [5, 5], [-1, 5], [-1, -1]], [[0.75, 0.75], [2.75, 0.75], [2.75, 2.75], [0.75, 2.75], [0.75, 0.75]])),
    "feature_id LIKE 'g-%' AND feature_id NOT IN ('g-6', 'g-7', 'g-11', 'g-12')"],
  ['S_INTERSECTS(BBOX(0, 0, 1, 1), geometry)', op('s_intersects', bbox(0, 0, 1, 1), p('geometry')), `ST_Intersects(geom, ${env(0, 0, 1, 1)})`],
  ['S_INTERSECTS(geometry, BBOX(30.999, 30, 31, 31))', op('s_intersects', p('geometry'), bbox(30.999, 30, 31, 31)), "feature_id IN ('touch-left', 'touch-right')"],
  ['S_WITHIN(geometry, BBOX(-180, -90, 180, 90))', op('s_within', p('geometry'), bbox(-180, -90, 180, 90)), 'true'],
  ['s_intersects(geometry, bbox(-180, -90, 180, 90)) AND S_INTERSECTS(geometry, geometry)', op('and', op('s_intersects', p('geometry'), bbox(-180, -90, 180, 90)), op('s_intersects', p('geometry'), p('geometry'))), 'true'],
  // Temporal functions on INTERVAL(start_at, end_at), instants and open ends.
  ["T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2024-03-01', '2024-03-10'))", op('t_intersects', period, interval('2024-03-01', '2024-03-10')), `${closed("'2024-03-10Z'")} AND upper(period) >= '2024-03-01Z'`],
  ["T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2024-05-01T00:00:00Z', '..'))", op('t_intersects', period, interval('2024-05-01T00:00:00Z', '..')), "upper(period) >= '2024-05-01Z'"],
  ["T_BEFORE(INTERVAL(start_at, end_at), DATE('2024-05-01'))", op('t_before', period, date('2024-05-01')), "upper(period) < '2024-05-01Z'"],
  ["T_AFTER(INTERVAL(start_at, end_at), TIMESTAMP('2024-02-15T00:00:00Z'))", op('t_after', period, ts('2024-02-15T00:00:00Z')), "lower(period) > '2024-02-15Z'"],
  ["T_DISJOINT(INTERVAL(start_at, end_at), INTERVAL('2024-03-01', '2024-03-10'))", op('t_disjoint', period, interval('2024-03-01', '2024-03-10')), "upper(period) < '2024-03-01Z' OR lower(period) > '2024-03-10Z'"],
  ["T_EQUALS(INTERVAL(start_at, end_at), INTERVAL('2024-01-01', '2024-03-01'))", op('t_equals', period, interval('2024-01-01', '2024-03-01')), "feature_id = 'touch-left'"],
  ["T_MEETS(INTERVAL(start_at, end_at), INTERVAL('2024-03-01', '..'))", op('t_meets', period, interval('2024-03-01', '..')), "feature_id = 'touch-left'"],
  ["T_METBY(INTERVAL(start_at, end_at), INTERVAL('..', '2024-03-01'))", op('t_metBy', period, interval('..', '2024-03-01')), "lower(period) = '2024-03-01Z'"],
  ["T_DURING(INTERVAL(start_at, end_at), INTERVAL('2023-12-01', '2024-10-01'))", op('t_during', period, interval('2023-12-01', '2024-10-01')), "lower(period) > '2023-12-01Z' AND upper(period) < '2024-10-01Z'"],
  ["T_CONTAINS(INTERVAL(start_at, end_at), INTERVAL('2024-06-01', '2024-06-02'))", op('t_contains', period, interval('2024-06-01', '2024-06-02')), "lower(period) < '2024-06-01Z' AND upper(period) > '2024-06-02Z'"],
  ["T_STARTS(INTERVAL(start_at, end_at), INTERVAL('2024-01-01', '2025-01-01'))", op('t_starts', period, interval('2024-01-01', '2025-01-01')), "lower(period) = '2024-01-01Z' AND upper(period) < '2025-01-01Z'"],
  ["T_STARTEDBY(INTERVAL(start_at, end_at), INTERVAL('2024-01-01', '2024-02-01'))", op('t_startedBy', period, interval('2024-01-01', '2024-02-01')), "lower(period) = '2024-01-01Z' AND upper(period) > '2024-02-01Z'"],
  ["T_FINISHES(INTERVAL(start_at, end_at), INTERVAL('2023-01-01', '2024-08-01'))", op('t_finishes', period, interval('2023-01-01', '2024-08-01')), "lower(period) > '2023-01-01Z' AND upper(period) = '2024-08-01Z'"],
  ["T_FINISHEDBY(INTERVAL(start_at, end_at), INTERVAL('2024-07-01', '2024-08-01'))", op('t_finishedBy', period, interval('2024-07-01', '2024-08-01')), "lower(period) < '2024-07-01Z' AND upper(period) = '2024-08-01Z'"],
  ["T_OVERLAPS(INTERVAL(start_at, end_at), INTERVAL('2024-04-01', '2025-01-01'))", op('t_overlaps', period, interval('2024-04-01', '2025-01-01')), "lower(period) < '2024-04-01Z' AND '2024-04-01Z' < upper(period) AND upper(period) < '2025-01-01Z'"],
  ["T_OVERLAPPEDBY(INTERVAL(start_at, end_at), INTERVAL('2023-01-01', '2024-04-01'))", op('t_overlappedBy', period, interval('2023-01-01', '2024-04-01')), "'2023-01-01Z' < lower(period) AND lower(period) < '2024-04-01Z' AND '2024-04-01Z' < upper(period)"],
  ["T_INTERSECTS(start_at, INTERVAL('2024-02-01', '2024-03-01'))", op('t_intersects', p('start_at'), interval('2024-02-01', '2024-03-01')), "lower(period) BETWEEN '2024-02-01Z' AND '2024-03-01Z'"],
  ["T_BEFORE(created_at, TIMESTAMP('2100-01-01T00:00:00Z'))", op('t_before', p('created_at'), ts('2100-01-01T00:00:00Z')), 'true'],
  ["T_EQUALS(start_at, DATE('2024-03-01'))", op('t_equals', p('start_at'), date('2024-03-01')), "lower(period) = '2024-03-01Z'"],
  ["T_INTERSECTS(INTERVAL('..', '..'), INTERVAL(start_at, end_at))", op('t_intersects', interval('..', '..'), period), 'true'],
  ["T_AFTER(INTERVAL(start_at, '..'), DATE('2024-05-15'))", op('t_after', interval(p('start_at'), '..'), date('2024-05-15')), "lower(period) > '2024-05-15Z'"],
  // Property against property.
  ['start_at < end_at', op('<', p('start_at'), p('end_at')), 'true'],
  ["T_MEETS(INTERVAL(start_at, end_at), INTERVAL(end_at, '..'))", op('t_meets', period, interval(p('end_at'), '..')), 'true'],
  ['feature_id = id', op('=', p('feature_id'), p('id')), 'false'],
  ['area_m2 BETWEEN area_m2 AND area_m2', op('between', p('area_m2'), p('area_m2'), p('area_m2')), 'true'],
  // As clients write them: quoted names, parentheses around each term, TIMESTAMP literals.
  ['("feature_id" = \'g-1\') OR ("feature_id" = \'g-2\')', op('or', op('=', p('feature_id'), 'g-1'), op('=', p('feature_id'), 'g-2')), "feature_id IN ('g-1', 'g-2')"],
  ['("start_at" >= TIMESTAMP(\'2024-03-01T00:00:00Z\')) AND ("area_m2" > 3070000000)', op('and', op('>=', p('start_at'), ts('2024-03-01T00:00:00Z')), op('>', p('area_m2'), 3070000000)), "lower(period) >= '2024-03-01Z' AND area_m2 > 3070000000"],
  // All at once.
  ["area_m2 > 1e9 AND conflict = false AND S_INTERSECTS(geometry, BBOX(0, 0, 3, 3)) AND T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2024-03-01', '2024-06-01'))",
    op('and', op('>', p('area_m2'), 1e9), op('=', p('conflict'), false), op('s_intersects', p('geometry'), bbox(0, 0, 3, 3)), op('t_intersects', period, interval('2024-03-01', '2024-06-01'))),
    `area_m2 > 1e9 AND NOT ${CONFLICT} AND ST_Intersects(geom, ${env(0, 0, 3, 3)}) AND ${closed("'2024-06-01Z'")} AND upper(period) >= '2024-03-01Z'`]
]

/** The JSON form without the text parser's offsets (a symbol-keyed member). */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown

t.test(`${CASES.length} filters, text and JSON: the sources of the same question in SQL`, async (t) => {
  t.ok(CASES.length >= 60)
  for (const [text, json, where] of CASES) {
    const expected = await sqlIds(where)
    const parsed = parseCql2Text(text)
    t.same('json' in parsed ? plain(parsed.json) : parsed, plain(json), `${text}: parses to its JSON`)
    t.same(await featureIds({ filter: text }), expected, `${text} (${expected.length})`)
    t.same(await featureIds({ filter: JSON.stringify(json), 'filter-lang': 'cql2-json' }), expected, `${JSON.stringify(json)}`)
  }
})

t.test('filters AND the other parameters: bbox, datetime, the admin\'s organisation; the cursor is bound to its filter', async (t) => {
  t.same(await featureIds({ filter: "feature_id LIKE 'g-%'", bbox: '0,0,1.2,1.2' }), await sqlIds(`feature_id LIKE 'g-%' AND ST_Intersects(geom, ${env(0, 0, 1.2, 1.2)})`))
  t.same(await featureIds({ filter: 'S_INTERSECTS(geometry, BBOX(0, 0, 4, 4))', datetime: '2024-06-15T00:00:00Z' }),
    await sqlIds(`ST_Intersects(geom, ${env(0, 0, 4, 4)}) AND period @> '2024-06-15Z'::timestamptz`))
  t.same(await featureIds({ filter: 'conflict = true', organisation: 'org-b' }, admin.headers), ['b-clash'], 'an admin\'s organisation')
  t.same(await featureIds({ filter: 'conflict = true' }, admin.headers), [...await sqlIds(CONFLICT), 'b-clash'].sort(), 'an admin sees every organisation')
  t.same(await featureIds({ filter: 'conflict = true' }, editorB.headers), ['b-clash'], 'an editor sees its own')
  // Page by 3 through a filter: every match once; the cursor refuses another filter.
  const filter = "feature_id LIKE 'g-1%' OR S_INTERSECTS(geometry, BBOX(179, 0, -179, 1))"
  const seen: string[] = []
  let next: string | undefined = `/collections/sources/items?limit=3&filter=${encodeURIComponent(filter)}`
  let cursorUrl = ''
  for (let pages = 0; next !== undefined && pages < 20; pages++) {
    const res = await app.inject({ method: 'GET', url: next.replace(/^http:\/\/[^/]+/, ''), headers: editorA.headers })
    t.equal(res.statusCode, 200)
    const page = res.json() as Page
    if (pages === 0) t.equal(page.numberMatched, 13, 'numberMatched on the first page')
    seen.push(...page.features.map((f) => f.properties.feature_id))
    next = page.links.find((l) => l.rel === 'next')?.href
    if (next !== undefined) cursorUrl = next
  }
  t.same(seen.sort(), await sqlIds(`feature_id LIKE 'g-1%' OR feature_id LIKE '%edge'`), 'each match exactly once')
  const other = new URL(cursorUrl)
  other.searchParams.set('filter', "feature_id LIKE 'g-%'")
  const body = expectError(t, await app.inject({ method: 'GET', url: `${other.pathname}${other.search}`, headers: editorA.headers }), 400, 'VALIDATION_FAILED')
  t.match(body.details, [{ pointer: '?cursor', message: /another query/ }])
})

/** [query, the pointer, what its message says]. */
const QUERYABLE_NAMES = propertiesWhere((p) => p.queryable).map(([name]) => name)
const BAD: Array<[Record<string, string>, string, RegExp]> = [
  [{ filter: 'foo = 1' }, '?filter', new RegExp(`unknown property "foo": the queryables are ${QUERYABLE_NAMES.join(', ')}; any attribute is properties\\.name \\(at character 1\\)`)],
  [{ filter: 'organisation = \'org-b\'' }, '?filter', /unknown property "organisation"/],
  [{ filter: 'area_m2 >' }, '?filter', /at character 10 \(line 1, column 10\): expected one of .*a number.*; found the end of the filter/],
  [{ filter: "feature_id = 'a" }, '?filter', /at character \d+ .*expected/],
  [{ filter: 'feature_id = 1 1' }, '?filter', /at character 16.*expected one of "AND", "OR", the end; found "1"/],
  [{ filter: "area_m2 = 'x'" }, '?filter', /= has operands of different types: the property area_m2 is a number, 'x' is a character string: compare it with a number, written without quotes \(such as 1000\)/],
  [{ filter: "area_m2 = '12.5'" }, '?filter', /the property area_m2 is a number, '12\.5' is a character string: write the number without quotes: 12\.5/],
  [{ filter: "start_at > '2024-01-01'" }, '?filter', /> has operands of different types: the property start_at is a timestamp, '2024-01-01' is a character string: write the date as DATE\('2024-01-01'\) \(or TIMESTAMP\('2024-01-01T00:00:00Z'\)\)/],
  [{ filter: "end_at <= '2024-01-01T12:00:00Z'" }, '?filter', /the property end_at is a timestamp, '2024-01-01T12:00:00Z' is a character string: write the instant as TIMESTAMP\('2024-01-01T12:00:00Z'\)/],
  [{ filter: "start_at BETWEEN '2024-01-01' AND '2024-02-01'" }, '?filter', /BETWEEN has operands of different types: the property start_at is a timestamp, '2024-01-01' is a character string: write the date as DATE/],
  [{ filter: "conflict = 'true'" }, '?filter', /the property conflict is a boolean, 'true' is a character string: compare it with TRUE or FALSE, without quotes/],
  [{ filter: 'feature_id IN (\'a\', 3)' }, '?filter', /IN has operands of different types: the property feature_id is a character string, 3 is a number: quote the value: '3'/],
  [{ filter: 'start_at = area_m2' }, '?filter', /the property start_at is a timestamp, the property area_m2 is a number: a property is compared with one of its own type/],
  [{ filter: '{"op":">","args":[{"property":"start_at"},"2024-01-01"]}', 'filter-lang': 'cql2-json' }, '?filter', /the property start_at is a timestamp, "2024-01-01" is a character string: write the date as \{"date":"2024-01-01"\}/],
  [{ filter: "feature_id LIKE 5" }, '?filter', /pattern of LIKE must be a character string literal/],
  [{ filter: 'area_m2 LIKE \'1%\'' }, '?filter', /LIKE compares a character string, not a number/],
  [{ filter: "feature_id LIKE 'a\\'" }, '?filter', /expected/],
  [{ filter: "feature_id LIKE 'a\\\\'" }, '?filter', /ends with the escape character/],
  [{ filter: 'geometry = 1' }, '?filter', /a geometry cannot be compared this way/],
  [{ filter: 'bar(1) = 1' }, '?filter', /unknown function "bar"/],
  [{ filter: "CASEI(feature_id) = CASEI('G-1')" }, '?filter', /CASEI is not supported/],
  [{ filter: "A_CONTAINS(feature_id, ('a'))" }, '?filter', /A_CONTAINS is not supported/],
  [{ filter: 'conflict' }, '?filter', /the property conflict is not a predicate/],
  [{ filter: 'S_INTERSECTS(geometry, POLYGON((0 0, 1 0, 1 1, 0 1)))' }, '?filter', /ring 0 of a polygon is not closed/],
  [{ filter: 'S_INTERSECTS(geometry, POLYGON((0 0, 1 0, 0 0)))' }, '?filter', /ring 0 of a polygon has at least 4 positions/],
  [{ filter: 'S_WITHIN(geometry, POLYGON((0 0, 1 1, 1 0, 0 1, 0 0)))' }, '?filter', /geometry literal 1 \(a line or polygon\) is not valid: Self-intersection/],
  [{ filter: 'S_INTERSECTS(geometry, POINT(181 0))' }, '?filter', /outside CRS84/],
  [{ filter: 'S_INTERSECTS(geometry, POINT(1))' }, '?filter', /at character 31.*a space before the next coordinate/],
  [{ filter: 'S_INTERSECTS(geometry, BBOX(0, 10, 1, 5))' }, '?filter', /south \(10\) must not be above its north \(5\)/],
  [{ filter: 'S_WITHIN(geometry, BBOX(0, 0, 0, 5))' }, '?filter', /without width or height/],
  [{ filter: 'S_INTERSECTS(geometry, 1)' }, '?filter', /S_INTERSECTS relates geometries, and 1 is a number: use the property geometry, or a literal such as POINT\(5\.1 52\.0\)/],
  [{ filter: 'S_INTERSECTS(feature_id, BBOX(0, 0, 1, 1))' }, '?filter', /S_INTERSECTS relates geometries, and the property feature_id is a character string: use the property geometry/],
  [{ filter: "S_WITHIN(geometry, 'POINT(1 2)')" }, '?filter', /and 'POINT\(1 2\)' is a character string: write the geometry without quotes: POINT\(1 2\)/],
  [{ filter: "T_AFTER(area_m2, DATE('2024-01-01'))" }, '?filter', /T_AFTER relates instants and intervals, and the property area_m2 is a number: use a timestamp property \(start_at, end_at, created_at, updated_at\), INTERVAL\(start_at, end_at\), DATE\('…'\)/],
  [{ filter: "T_BEFORE(start_at, '2024-01-01')" }, '?filter', /T_BEFORE relates instants and intervals, and '2024-01-01' is a character string: write the date as DATE\('2024-01-01'\)/],
  [{ filter: "T_DURING(created_at, INTERVAL('2024-01-01', '2024-02-01'))" }, '?filter', /T_DURING relates intervals, and this is an instant/],
  [{ filter: "T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2024-02-01', '2024-01-01'))" }, '?filter', /starts after it ends/],
  [{ filter: "start_at > DATE('2024-02-30')" }, '?filter', /"2024-02-30" is not a calendar date/],
  [{ filter: "start_at > TIMESTAMP('2024-01-01T00:00:00')" }, '?filter', /a TIMESTAMP is an RFC 3339 UTC date-time/],
  [{ filter: 'area_m2 > 1e400' }, '?filter', /the number 1e400 is out of range/],
  [{ filter: '{"op":">","args":[{"property":"area_m2"},1e400]}', 'filter-lang': 'cql2-json' }, '?filter', /the number is out of range: a number must be finite \(within ±1\.8e308\) \(at \/args\/1\)/],
  [{ filter: "feature_id = 'a\u0000'" }, '?filter', /must not contain U\+0000/],
  [{ filter: `${'NOT ('.repeat(25)}conflict = true${')'.repeat(25)}` }, '?filter', new RegExp(`nests deeper than the limit of ${FILTER_LIMITS.depth} levels`)],
  [{ filter: `${'('.repeat(1000)}conflict = true${')'.repeat(1000)}` }, '?filter', /nests deeper than the limit/],
  [{ filter: `${'NOT '.repeat(2000)}conflict = true` }, '?filter', /nests deeper than the limit/],
  [{ filter: `feature_id IN (${Array.from({ length: 300 }, (_, i) => `'f${i}'`).join(',')})` }, '?filter', new RegExp(`more than the limit of ${FILTER_LIMITS.nodes}`)],
  [{ filter: `S_INTERSECTS(geometry, LINESTRING(${Array.from({ length: 1001 }, (_, i) => `${i / 100} 0`).join(',')}))` }, '?filter', new RegExp(`more than the limit of ${FILTER_LIMITS.vertices} positions`)],
  [{ filter: `feature_id = '${'x'.repeat(9000)}'` }, '?filter', new RegExp(`the limit is ${FILTER_LIMITS.characters}`)],
  [{ filter: '{"op":"=","args":[{"property":"id"}]', 'filter-lang': 'cql2-json' }, '?filter', /is not JSON/],
  [{ filter: '{"op":"=","args":[{"property":"id"}]}', 'filter-lang': 'cql2-json' }, '?filter', /= takes 2 operands, not 1 \(at the top\)/],
  [{ filter: '{"op":"and","args":[true,{"op":"like","args":[{"property":"nope"},"x"]}]}', 'filter-lang': 'cql2-json' }, '?filter', /unknown property "nope".*\(at \/args\/1\/args\/0\)/],
  [{ filter: '{"op":"s_intersects","args":[{"property":"geometry"},{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}]}', 'filter-lang': 'cql2-json' }, '?filter', /is not valid: Self-intersection/],
  [{ filter: '[1,2]', 'filter-lang': 'cql2-json' }, '?filter', /an array is not a predicate/],
  [{ filter: 'null', 'filter-lang': 'cql2-json' }, '?filter', /null is not a predicate/],
  [{ filter: "feature_id = 'x'", 'filter-lang': 'cql3' }, '?filter-lang', /must be one of/],
  [{ filter: "feature_id = 'x'", 'filter-crs': 'http://www.opengis.net/def/crs/EPSG/0/4326' }, '?filter-crs', /must be one of/]
]

t.test('each bad filter is a 400 naming what is wrong and where', async (t) => {
  for (const [query, pointer, message] of BAD) {
    const res = await items(query)
    const body = expectError(t, res, 400, 'VALIDATION_FAILED')
    t.match(body.details?.[0], { pointer, message }, `${JSON.stringify(query).slice(0, 120)}: ${body.details?.[0]?.message.slice(0, 200)}`)
  }
})

t.test('fuzz: random text, JSON, nesting, numbers, Unicode and huge WKT never make a 500', async (t) => {
  let seed = 20240601
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T
  const TOKENS = ['(', ')', ',', "'", '"', '=', '<>', '<', '>=', 'AND', 'OR', 'NOT', 'LIKE', 'BETWEEN', 'IN', 'IS', 'NULL', 'TRUE', 'FALSE',
    'S_INTERSECTS', 'S_WITHIN', 'S_CROSSES', 'T_INTERSECTS', 'T_MEETS', 'T_DURING', 'INTERVAL', 'DATE', 'TIMESTAMP', 'BBOX', 'POINT', 'POLYGON',
    'MULTIPOLYGON', 'GEOMETRYCOLLECTION', 'geometry', 'start_at', 'end_at', 'created_at', 'area_m2', 'conflict', 'id', 'feature_id', 'foo',
    '1e400', '-0', '0', '-1e-400', '3.5', '.5', '1.', '180', '-90', "'..'", "'2024-01-01'", "'2024-02-30'", "'2024-01-01T00:00:00Z'", "'x''y'",
    "'\\'", '\\', '%', '_', 'é', '𝔘', '\u0000', '\uD800', '\u202E', '\uFEFF', ' ', '\t', '\n', 'CASEI', 'A_EQUALS', 'div', '+', '*', '[', ']', '{', '}']
  const texts: string[] = []
  for (let i = 0; i < 250; i++) texts.push(Array.from({ length: 1 + Math.floor(random() * 14) }, () => pick(TOKENS)).join(pick([' ', ''])))
  // Valid filters with one token replaced or cut short.
  for (const [text] of CASES) {
    const words = text.split(/(\s+|[(),])/)
    words[Math.floor(random() * words.length)] = pick(TOKENS)
    texts.push(words.join(''), text.slice(0, Math.floor(random() * text.length)))
  }
  texts.push('('.repeat(40) + 'TRUE' + ')'.repeat(40), 'NOT '.repeat(3000) + 'TRUE', 'S_INTERSECTS(' .repeat(100),
    `S_INTERSECTS(geometry, POLYGON((${Array.from({ length: 999 }, (_, i) => `${Math.cos(i) * 10} ${Math.sin(i * 7) * 10}`).join(',')}, 10 0)))`,
    `S_INTERSECTS(geometry, POLYGON((${Array.from({ length: 900 }, (_, i) => `${(i % 30) / 3} ${Math.floor(i / 30) / 3}`).join(',')})))`,
    `S_CROSSES(geometry, MULTILINESTRING(${Array.from({ length: 400 }, () => '(0 0, 1 1)').join(',')}))`)
  const values = (depth: number): unknown => {
    const r = random()
    if (depth > 4 || r < 0.3) return pick([0, -0, 1e308, -1e308, 1.5, 'x', '', '..', '2024-01-01', true, false, null, [], {}, { property: 'area_m2' }, { property: 'geometry' }, { bbox: [0, 0, 1, 1] }, { date: '2024-01-01' }, { interval: ['..', '..'] }])
    if (r < 0.5) return Array.from({ length: Math.floor(random() * 4) }, () => values(depth + 1))
    return { op: pick(['and', 'or', 'not', '=', '<', 'like', 'between', 'in', 'isNull', 's_intersects', 's_within', 't_intersects', 't_meets', 'casei', 'nope', 'div']), args: Array.from({ length: Math.floor(random() * 4) }, () => values(depth + 1)) }
  }
  const jsons = Array.from({ length: 250 }, () => JSON.stringify(values(0)))
  jsons.push('['.repeat(10000) + ']'.repeat(10000), '{"op":"not","args":['.repeat(500) + 'true' + ']}'.repeat(500), '1e400', '-0', '"\\u0000"',
    JSON.stringify({ op: 's_intersects', args: [{ property: 'geometry' }, { type: 'LineString', coordinates: Array.from({ length: 5000 }, (_, i) => [i / 1000, 0]) }] }))
  const statuses = new Map<number, number>()
  for (const [lang, filters] of [['cql2-text', texts], ['cql2-json', jsons]] as const) {
    for (const filter of filters) {
      const res = await items({ filter, 'filter-lang': lang, limit: '5' })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode !== 200 && !(res.statusCode === 400 && Value.Check(ErrorSchema, res.json()))) t.fail(`${lang} ${JSON.stringify(filter).slice(0, 300)}: ${res.statusCode} ${res.body.slice(0, 300)}`)
    }
  }
  t.same([...statuses.keys()].sort(), [200, 400], `only 200 and 400: ${JSON.stringify(Object.fromEntries(statuses))}`)
  // The checker alone, on the same inputs: it never throws.
  for (const filter of texts) t.doesNotThrow(() => checkFilter(filter, 'cql2-text'))
  // A filter parsed from its template (its numbers put into the parse of the text with zeros)
  // is the filter parsed whole, offsets and errors included, on the fuzz's texts too.
  // (Templates are for texts of up to 2,048 characters; the longer are parsed whole anyway.)
  const short = texts.filter((text) => text.length <= 2048)
  let differ = 0
  for (const filter of short) if (withOffsets(parseCql2Text(filter)) !== withOffsets(parseWhole(filter))) differ++
  t.equal(differ, 0, `${short.length} fuzz texts: parsed from a template as parsed whole`)
})

/** JSON of a parse with each node's TEXT_OFFSET shown, so that a comparison covers it. */
const withOffsets = (parsed: unknown): string => JSON.stringify(parsed, (_key, value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && TEXT_OFFSET in value
    ? { ...Object.fromEntries(Object.entries(value)), '@offset': (value as Record<symbol, unknown>)[TEXT_OFFSET] }
    : value)

t.test('a filter of a template already parsed: its own numbers, its own offsets; numbers in names and strings stay as written', async (t) => {
  let seed = 7
  const digit = () => String((seed = (seed * 31 + 17) % 997) % 10)
  const renumber = (text: string): string => text.replace(/\d/g, digit)
  const texts = [...CASES.map(([text]) => text),
    "feature_id = 'a12' AND area_m2 BETWEEN -1 AND +2.5e3", 'x.5 = 1', '"p 1" = 2', 'area_m2 IN (1, .5, 3., -0)',
    'S_WITHIN(geometry, MULTIPOINT(1 2, (3 4)))', 'S_INTERSECTS(geometry, POINT Z(1 2 3))', 'a-1 = 2', 'area_m2 = 1.5.3', 'area_m2 = --1', 'area_m2 > 1e400']
  let differ = 0
  for (const text of texts) {
    for (const variant of [text, renumber(text), renumber(text)]) {
      const [a, b] = [withOffsets(parseCql2Text(variant)), withOffsets(parseWhole(variant))]
      if (a !== b) { differ++; t.fail(`${variant}: ${a} against ${b}`) }
    }
  }
  t.equal(differ, 0, `${texts.length * 3} filters, each of them after its template was parsed`)
  t.match(parseCql2Text("feature_id = 'a12' AND area_m2 < 7"), { json: { op: 'and', args: [{ args: [{ property: 'feature_id' }, 'a12'] }, { args: [{ property: 'area_m2' }, 7] }] } })
  t.match(parseCql2Text('area_m2 > 1e400'), { syntax: { offset: 10, message: /out of range/ } })
})

t.test('queryables: JSON Schema 2020-12 of exactly the filterable properties, linked from the collection; conformance', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/collections/sources/queryables', headers: { ...editorA.headers, host: 'registry.example' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/schema\+json/)
  const doc = res.json()
  t.match(doc, { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'http://registry.example/collections/sources/queryables', type: 'object', additionalProperties: false })
  t.same(Object.keys(doc.properties), QUERYABLE_NAMES, 'the registry\'s queryables, in its order')
  t.match(doc.properties, { start_at: { type: 'string', format: 'date-time' }, area_m2: { type: 'number' }, conflict: { type: 'boolean' }, geometry: { format: 'geometry-polygon-or-multipolygon' } })
  t.notOk('type' in doc.properties.geometry, 'a spatial queryable has no type')
  expectError(t, await app.inject({ method: 'GET', url: '/collections/sources/queryables' }), 401, 'UNAUTHORIZED')
  const links = (await app.inject({ method: 'GET', url: '/collections/sources', headers: editorA.headers })).json().links as Array<{ rel: string, type: string }>
  t.ok(links.some((l) => l.rel === 'http://www.opengis.net/def/rel/ogc/1.0/queryables' && l.type === 'application/schema+json'))
  const conformsTo = (await app.inject({ method: 'GET', url: '/conformance' })).json().conformsTo as string[]
  for (const c of ['filter', 'features-filter', 'queryables']) t.ok(conformsTo.includes(`http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/${c}`), c)
  for (const c of ['cql2-text', 'cql2-json', 'basic-cql2', 'advanced-comparison-operators', 'basic-spatial-functions', 'basic-spatial-functions-plus', 'spatial-functions', 'temporal-functions', 'property-property']) {
    t.ok(conformsTo.includes(`http://www.opengis.net/spec/cql2/1.0/conf/${c}`), c)
  }
  for (const c of ['case-insensitive-comparison', 'accent-insensitive-comparison', 'array-functions', 'functions', 'arithmetic']) t.notOk(conformsTo.includes(`http://www.opengis.net/spec/cql2/1.0/conf/${c}`), `not ${c}`)
  t.ok(conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables-query-parameters'), 'queryables as query parameters (test/sources/properties.test.ts)')
})
