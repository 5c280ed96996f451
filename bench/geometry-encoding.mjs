// Which way should polygons travel to PostGIS? Compares, for the same 1,000-feature insert:
//   ewkb-multipolygon: what the service does: one MultiPolygon as binary EWKB (one bytea
//                      parameter), split back into rows by ST_Dump
//   ewkb-hex:          GeoJSON → wkx.Polygon → hex EWKB per feature, `text[]` cast to geometry
//   geojson-pg:        GeoJSON → JSON text in Node, ST_GeomFromGeoJSON in SQL
// Reports the Node-side encoding time and the end-to-end time (encode + INSERT … unnest),
// median of 7 runs, for polygons of 5, 500 and 5,000 vertices.
// Usage: DATABASE_URL=postgres://… node bench/geometry-encoding.mjs  (a migrated database)
import pg from 'pg'
import wkx from 'wkx'
import { randomBytes } from 'node:crypto'
import { multiPolygonEwkb } from '../dist/db/ewkb.js'

const url = process.env.DATABASE_URL
if (!url) { console.error('DATABASE_URL is required'); process.exit(2) }
const client = new pg.Client({ connectionString: url })
await client.connect()
await client.query(`INSERT INTO accounts (email, password_hash, role, organisation)
  VALUES ('bench-encoding@example.org', 'scrypt$x', 'editor', 'bench') ON CONFLICT DO NOTHING`)
const { rows: [{ id: accountId }] } = await client.query(`SELECT id FROM accounts WHERE email = 'bench-encoding@example.org'`)

function ring (vertices, cx, cy) {
  const r = []
  for (let i = 0; i < vertices - 1; i++) {
    const a = (2 * Math.PI * i) / (vertices - 1)
    r.push([cx + 0.01 * Math.cos(a), cy + 0.01 * Math.sin(a)])
  }
  r.push(r[0])
  return [r]
}

const unnest = 'unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(id, g, ord)'
const encoders = {
  'ewkb-multipolygon': {
    encode: (features) => multiPolygonEwkb(features),
    from: 'ROWS FROM (unnest($1::text[]), ST_Dump($2::bytea::geometry)) WITH ORDINALITY AS t(id, path, g, ord)',
    expr: 'g'
  },
  'ewkb-hex': {
    encode: (features) => features.map((rings) => {
      const [outer, ...holes] = rings.map((ring) => ring.map((p) => new wkx.Point(p[0], p[1])))
      return new wkx.Polygon(outer, holes, 4326).toEwkb().toString('hex')
    }),
    from: unnest,
    expr: 'g::geometry'
  },
  'geojson-pg': {
    encode: (features) => features.map((rings) => JSON.stringify({ type: 'Polygon', coordinates: rings.map((ring) => ring.map((p) => [p[0], p[1]])) })),
    from: unnest,
    expr: 'ST_SetSRID(ST_GeomFromGeoJSON(g), 4326)'
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const results = []
for (const vertices of [5, 500, 5000]) {
  const features = Array.from({ length: 1000 }, (_, i) => ring(vertices, (i % 300) * 0.1 - 15, Math.floor(i / 300) * 0.1))
  for (const [name, enc] of Object.entries(encoders)) {
    const encodeMs = []; const totalMs = []
    for (let run = 0; run < 7; run++) {
      await client.query('TRUNCATE sources')
      const t0 = process.hrtime.bigint()
      const geoms = enc.encode(features)
      const t1 = process.hrtime.bigint()
      const ids = features.map(() => 'src_' + randomBytes(16).toString('hex').replace(/[^0-9a-zA-Z]/g, '').padEnd(22, 'a').slice(0, 22))
      await client.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
        SELECT id, 'f' || ord, 'bench', $3::uuid, ${enc.expr}, tstzrange('2024-01-01Z', '2024-02-01Z', '[)')
        FROM ${enc.from}`, [ids, geoms, accountId])
      const t2 = process.hrtime.bigint()
      encodeMs.push(Number(t1 - t0) / 1e6); totalMs.push(Number(t2 - t0) / 1e6)
    }
    results.push({ vertices, encoding: name, encode_ms: median(encodeMs).toFixed(1), total_ms: median(totalMs).toFixed(1), polygons_per_s: Math.round(1000 / (median(totalMs) / 1000)) })
  }
}
await client.query('TRUNCATE sources')
await client.end()
console.table(results)
