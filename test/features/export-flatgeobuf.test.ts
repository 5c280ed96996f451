// The FlatGeobuf export reads each Feature in parts (sources.listing.ts rangeRowsQuery: the
// geometry as WKB, each property as its value) and encodes them itself, where the other formats
// pass PostgreSQL's Feature text on. Held here to the GeoJSONSeq export of the same sources,
// Feature by Feature: every property (the registry's, conflicts listed and counted beyond 100,
// attributes of every JSON type, a non-ASCII name, nulls) and every coordinate (a polygon with a
// hole, a MultiPolygon), in CRS84 and in EPSG:28992 and EPSG:3035 (easting first in the file,
// as GDAL reads FlatGeobuf); read back with the flatgeobuf package and, where installed, GDAL.
// On the server backend the same file is made from binary COPY rows (the default there) and from
// rows, and compared byte for byte.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { sql } from 'kysely'
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js'
import { openDatabase } from '../../src/db/open.js'
import { exportSources } from '../../src/features/bulk.js'
import { crsCatalogue } from '../../src/sources/crs.js'
import { sourceStore } from '../../src/sources/sources.store.js'
import { addAccount, backend, createDatabase, targetConfig, tempDir } from '../helper.js'

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
t.teardown(() => db.destroy())
const editor = await addAccount(db, { role: 'editor', organisation: 'org-f' })
const dir = await tempDir(t, 'sr-fgb-export-')
const catalogue = crsCatalogue([28992, 3035])

// 103 sources: a large one that 102 small ones overlap (so it lists 100 conflicts and counts
// 102), the small ones' attributes varied, one with a hole, one a MultiPolygon.
await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period, attributes)
  SELECT 'src_fgb' || lpad(n::text, 10, '0'), 'f-' || n, 'org-f', ${editor.id}::uuid,
    CASE WHEN n = 0 THEN ST_MakeEnvelope(5, 52, 5.2, 52.2, 4326)
      WHEN n = 1 THEN ST_GeomFromText('POLYGON((5.001 52.001, 5.009 52.001, 5.009 52.009, 5.001 52.009, 5.001 52.001), (5.003 52.003, 5.004 52.003, 5.004 52.004, 5.003 52.003))', 4326)
      WHEN n = 2 THEN ST_GeomFromText('MULTIPOLYGON(((5.011 52.011, 5.019 52.011, 5.019 52.019, 5.011 52.011)), ((5.1 52.1, 5.11 52.1, 5.11 52.11, 5.1 52.1)))', 4326)
      ELSE ST_MakeEnvelope(5 + n * 0.0015, 52.05, 5.001 + n * 0.0015, 52.051, 4326) END,
    tstzrange('2024-01-01Z'::timestamptz + n * interval '1 hour 0.123456 seconds', '2025-01-01Z'),
    jsonb_build_object('name', CASE WHEN n % 5 = 0 THEN NULL ELSE 'nom ' || n || ' é' END, 'n', n, 'x', n / 7.0, 'ok', n % 2 = 0,
      'tags', jsonb_build_array('a', n), 'nested', jsonb_build_object('k', n), 'größe', n * 1.5)
  FROM generate_series(0, 102) AS n`.execute(db)

interface Feature { id: string, geometry: { type: string, coordinates: unknown }, properties: Record<string, unknown> }

async function exportAs (format: 'fgb' | 'geojsonseq', name: string, crs?: string): Promise<Feature[]> {
  const to = join(dir, name)
  await exportSources(sourceStore(db), { organisation: 'org-f' }, { format, to, crs, catalogue, rowsPerQuery: 7 }, () => ({ done: () => {} }))
  if (format === 'geojsonseq') {
    return (await readFile(to, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l.slice(1)) as Feature)
  }
  const out: Feature[] = []
  const stream = Readable.toWeb(createReadStream(to)) as unknown as Parameters<typeof deserialize>[0]
  for await (const f of deserialize(stream) as AsyncGenerator<{ geometry: Feature['geometry'], properties: Record<string, unknown> }>) {
    const { id, ...properties } = f.properties
    out.push({ id: id as string, geometry: f.geometry, properties })
  }
  return out.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

/** The largest difference between two nested coordinate arrays, Infinity when their shapes differ. */
function coordinatesDiff (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b)
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return Infinity
  return a.reduce((m: number, x, i) => Math.max(m, coordinatesDiff(x, b[i])), 0)
}

function same (t: Test, fgb: Feature[], seq: Feature[], tolerance: number): void {
  t.equal(fgb.length, seq.length, 'as many Features')
  t.same(fgb.map((f) => f.id), seq.map((f) => f.id), 'the same ids')
  let differing = 0
  for (const [i, s] of seq.entries()) {
    const f = fgb[i] as Feature
    // FlatGeobuf leaves a null out; the columns are the first Feature's properties.
    const expected = Object.fromEntries(Object.entries(s.properties).filter(([, v]) => v !== null))
    const ok = JSON.stringify(f.properties) === JSON.stringify(expected) && f.geometry.type === s.geometry.type &&
      coordinatesDiff(f.geometry.coordinates, s.geometry.coordinates) <= tolerance
    if (!ok && differing++ < 3) t.same(f, { ...s, properties: expected }, `${s.id}: the same Feature`)
  }
  t.equal(differing, 0, 'every Feature the same')
}

t.test('CRS84: every property and coordinate as the GeoJSONSeq export has them', async (t) => {
  const seq = await exportAs('geojsonseq', 'all.geojsons')
  const fgb = await exportAs('fgb', 'all.fgb')
  t.equal(seq.length, 103)
  const big = seq.find((f) => f.id === 'src_fgb0000000000') as Feature
  t.equal((big.properties.conflicts as unknown[]).length, 100, 'the large source lists 100 conflicts')
  t.equal(big.properties.conflicts_total, 102, 'and counts them all')
  t.equal(seq.find((f) => f.id === 'src_fgb0000000002')?.geometry.type, 'MultiPolygon')
  same(t, fgb, seq, 1e-14)
  t.equal(fgb.find((f) => f.id === 'src_fgb0000000000')?.properties.conflicts_total, 102, 'conflicts_total where it is present')
  t.equal(fgb.find((f) => f.id === 'src_fgb0000000003')?.properties['größe'], 4.5, 'a non-ASCII attribute name')
  t.equal(fgb.find((f) => f.id === 'src_fgb0000000003')?.properties.start_at, '2024-01-01T03:00:00.370368Z', 'microseconds kept')
  t.same((fgb.find((f) => f.id === 'src_fgb0000000001')?.geometry.coordinates as unknown[]).length, 2, 'the hole kept')
  if (spawnSync('ogrinfo', ['--version']).status === 0) {
    const info = spawnSync('ogrinfo', ['-ro', '-al', '-so', join(dir, 'all.fgb')], { encoding: 'utf8' }).stdout
    t.match(info, 'Feature Count: 103')
    t.match(info, /conflicts_total: Integer64/, 'GDAL reads the Long column')
    t.match(info, /start_at: DateTime/, 'and the DateTime one')
  }
})

for (const epsg of [28992, 3035]) {
  t.test(`EPSG:${epsg}: the same coordinates as the GeoJSONSeq export's, easting first`, async (t) => {
    const crs = `http://www.opengis.net/def/crs/EPSG/0/${epsg}`
    const seq = await exportAs('geojsonseq', `${epsg}.geojsons`, crs)
    const fgb = await exportAs('fgb', `${epsg}.fgb`, crs)
    // GeoJSON keeps the CRS's axis order (EPSG:3035: northing first); the file easting first.
    const eastingFirst = epsg === 3035
      ? seq.map((f) => ({ ...f, geometry: { ...f.geometry, coordinates: swap(f.geometry.coordinates) } }))
      : seq
    same(t, fgb, eastingFirst, 1e-6)
  })
}

function swap (c: unknown): unknown {
  if (Array.isArray(c) && typeof c[0] === 'number') return [c[1], c[0], ...c.slice(2)]
  return Array.isArray(c) ? c.map(swap) : c
}

// On the server backend the export reads binary COPY rows and copies their bytes into the file
// (formats.ts flatGeobufOfBinaryRows); the file must be the one the rows make: the same header
// (columns, extent, count) and the same Features in the same order. The conflicts' JSON text
// differs only in how a number is written: PostgreSQL's text as the API sends it (2.5e-05)
// through COPY, JavaScript's (0.000025) from the rows, which parse and write it again; the
// flatgeobuf package reads a JSON column's values, so the Features compare equal.
t.test('through binary COPY: the same file as through rows', { skip: backend === 'embedded' ? 'the embedded backend reads rows' : false }, async (t) => {
  const store = sourceStore(db)
  const read = async (file: string): Promise<unknown[]> => {
    const out: unknown[] = []
    const stream = Readable.toWeb(createReadStream(file)) as unknown as Parameters<typeof deserialize>[0]
    for await (const f of deserialize(stream) as AsyncGenerator<{ geometry: unknown, properties: Record<string, unknown> }>) {
      out.push({ geometry: f.geometry, properties: f.properties })
    }
    return out
  }
  for (const [name, crs, filter] of [
    ['CRS84', undefined, undefined],
    ['EPSG:3035', 'http://www.opengis.net/def/crs/EPSG/0/3035', undefined],
    ['a filter', undefined, 'properties.n > 40 AND properties.name LIKE \'nom%\'']
  ] as const) {
    const files: string[] = []
    for (const copy of [true, false]) {
      const to = join(dir, `${name.replace(/\W/g, '')}-${copy ? 'copied' : 'rows'}.fgb`)
      const n = await exportSources(store, { organisation: 'org-f' }, { format: 'fgb', to, crs, filter, catalogue, rowsPerQuery: 7, copy }, () => ({ done: () => {} }))
      t.ok(n > 10, `${name}, ${copy ? 'copied' : 'rows'}: ${n} sources`)
      files.push(to)
    }
    const [copied, rows] = await Promise.all(files.map(async (f) => await readFile(f)))
    const headerEnd = 12 + (copied as Buffer).readUInt32LE(8)
    t.ok((copied as Buffer).subarray(0, headerEnd).equals((rows as Buffer).subarray(0, headerEnd)), `${name}: the same header`)
    const [a, b] = await Promise.all(files.map(read))
    t.equal((a as unknown[]).length, (b as unknown[]).length)
    t.same(a, b, `${name}: the same Features in the same order`)
  }
})
