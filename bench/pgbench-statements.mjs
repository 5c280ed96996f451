// The statements of the service's requests as pgbench scripts (bench/run.mjs compares their
// throughput, bench/tail-latency.mjs their latency at a paced rate).
import { multiPolygonEwkb } from '../dist/db/ewkb.js'
import { pgbenchPlacement, polygon } from './bodies.mjs'

// pgbench reads ":MI" and ":SS" inside literals as its variables, so the service's
// 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"' is spelled with chr(58) for ':' (a constant, folded at plan time).
export const iso = `('YYYY-MM-DD"T"HH24' || chr(58) || 'MI' || chr(58) || 'SS.US"Z"')`
// The geometries are the EWKB MultiPolygon the service itself makes (dist/sources/geojson.js) of
// the polygons the load generator posts, moved per transaction to a block at random as the
// generator moves each request's (bodies.mjs placement); ids, feature ids and dates are built
// per transaction; the new sources' conflicts are read back, as the service does for its 201.
const multiHex = (n) => multiPolygonEwkb(Array.from({ length: n }, (_, i) => polygon(5, i))).toString('hex')
// A source's conflicts, as the service reads them with a GET and after a POST (its pairs,
// largest overlap first, the first 100 and the total beyond).
export const conflictsOf = (id) => `(SELECT CASE WHEN count(*) > 0 THEN json_build_object('list', json_agg(json_build_array(c.other_id, c.overlap_m2, c.overlap_ratio, to_char(lower(c.overlap_period) AT TIME ZONE 'UTC', ${iso}), to_char(upper(c.overlap_period) AT TIME ZONE 'UTC', ${iso})) ORDER BY c.overlap_m2 DESC, c.other_id), 'total', CASE WHEN count(*) > 100 THEN (SELECT count(*) FROM source_conflict_pairs AS p WHERE p.source_id = ${id}) END) END FROM (SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p WHERE p.source_id = ${id} ORDER BY p.overlap_m2 DESC, p.other_id LIMIT 101) AS c) AS "conflicts"`
/** A POST of `n` polygons by `accountId`: its INSERT and the read of the new sources' conflicts; ids start with src_<prefix>. */
export const insertFrom = (n, prefix, accountId) => {
  const place = pgbenchPlacement(n)
  return `\\set n random(1, ${prefix === 'p' ? '1000000000000000' : '1000000000000'})
${place.set}
INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) SELECT t.id, t.feature_id, 'bench', '${accountId}'::uuid, t.geom, tstzrange(t.start_at, t.end_at, '[)') FROM ROWS FROM (unnest(ARRAY(SELECT 'src_${prefix}' || lpad(CAST(CAST(:n AS bigint) * ${n} + g AS text), 21, '0') FROM generate_series(1, ${n}) AS g)), unnest(ARRAY(SELECT 'pg${prefix}-' || CAST(:n AS text) || '-' || g FROM generate_series(1, ${n}) AS g)), ST_Dump(ST_Translate('\\x${multiHex(n)}'::bytea::geometry, ${place.dx}, ${place.dy})), unnest(array_fill('2024-01-01T00:00:00.000000Z'::timestamptz, ARRAY[${n}])), unnest(array_fill('2024-02-01T00:00:00.000000Z'::timestamptz, ARRAY[${n}]))) WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, ord);
SELECT t.id, ${conflictsOf('t.id')} FROM unnest(ARRAY(SELECT 'src_${prefix}' || lpad(CAST(CAST(:n AS bigint) * ${n} + g AS text), 21, '0') FROM generate_series(1, ${n}) AS g)) AS t(id);
`
}
