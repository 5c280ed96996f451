// The items in every format, read back by GDAL (ogrinfo/ogr2ogr on the downloaded file): the same
// features with the same attributes as the GeoJSON page, by f= and by Accept; FlatGeobuf with its
// spatial index (a -spat query that GDAL answers from the index); the next page in a Link header;
// the formats in the collection's links; f=html answers the page shell before authentication.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as flatbuffers from 'flatbuffers'
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js'
import { fromByteBuffer } from 'flatgeobuf/lib/mjs/header-meta.js'
import { build, collection, feature, session, tempDir } from '../helper.js'

const hasGdal = spawnSync('ogrinfo', ['--version']).status === 0
const ctx = await build(t)
const { app } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const box = (x: number, y: number) => [[[x, y], [x + 0.25, y], [x + 0.25, y + 0.25], [x, y + 0.25], [x, y]]]
const seed = async (headers: Record<string, string>, features: unknown[]) => {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(...features) })
  if (res.statusCode !== 201) throw new Error(`seeding: ${res.statusCode} ${res.body}`)
}
// 30 boxes on a grid, two overlapping (a conflict, so the conflicts list is not empty), and a hostile id.
await seed(editorA.headers, [
  ...Array.from({ length: 30 }, (_, i) => feature(`a-${i}`, { coordinates: box(i % 6, Math.floor(i / 6)), start: `2024-0${1 + (i % 6)}-01T00:00:00Z` })),
  feature('overlap, "quoted"\nline', { coordinates: box(0.1, 0.1) })
])
await seed(editorB.headers, [feature('b-0', { coordinates: box(20, 20) })])
const dir = await tempDir(t, 'sr-formats-')

interface Feature { id: string, geometry: { coordinates: number[][][] }, properties: Record<string, unknown> }
const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers: { ...editorA.headers, ...headers } })
const reference = (await get('/collections/sources/items?limit=1000')).json() as { features: Feature[] }
/** As GDAL writes a feature to GeoJSON: every value as text, to compare with the reference. */
const asText = (v: unknown): string => v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)
/**
 * A date-time in milliseconds, its fraction rounded as GDAL rounds the service's microseconds
 * (.01966 → .020); Date.parse truncates it (.019), which made equal instants differ whenever the
 * sub-millisecond part was .5 or more.
 */
const instantMs = (text: string): number => {
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? ''
  return Date.parse(text.replace(/\//g, '-').replace(/\.\d+/, '')) + Math.round(Number(`0.${fraction || '0'}`) * 1000)
}
const expected = new Map(reference.features.map((f) => [f.id, f]))

/** ogr2ogr of a downloaded file to GeoJSON, as { id → feature }. */
function readBack (file: string, extra: string[] = []): Map<string, Feature> {
  const out = `${file}.out.geojson`
  const r = spawnSync('ogr2ogr', ['-f', 'GeoJSON', out, file, ...extra], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  return new Map()
}

async function download (url: string, name: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await get(url, headers)
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  const file = join(dir, name)
  await writeFile(file, res.rawPayload)
  return file
}

async function gdalFeatures (file: string, extra: string[] = []): Promise<Map<string, Feature>> {
  readBack(file, extra)
  const fc = JSON.parse(await readFile(`${file}.out.geojson`, 'utf8')) as { features: Array<Feature & { properties: Record<string, unknown> }> }
  return new Map(fc.features.map((f) => [String(f.properties.id), f]))
}

/** The features GDAL read have the reference's ids, geometries and every property (as text). */
function sameFeatures (t: { same: (a: unknown, b: unknown, m: string) => void, equal: (a: unknown, b: unknown, m: string) => void, comment: (m: string) => void }, got: Map<string, Feature>, what: string): void {
  t.same([...got.keys()].sort(), [...expected.keys()].sort(), `${what}: the same ids`)
  let differences = 0
  for (const [id, f] of got) {
    const want = expected.get(id)
    if (want === undefined) continue
    if (JSON.stringify(f.geometry.coordinates) !== JSON.stringify(want.geometry.coordinates)) differences++
    for (const [name, value] of Object.entries(want.properties)) {
      const v = f.properties[name]
      const text = typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) && typeof v === 'string' ? instantMs(v) === instantMs(value) : asText(v).replace(/\s/g, '') === asText(value).replace(/\s/g, '')
      if (!text) { differences++; t.comment(`${what} ${id} ${name}: ${asText(v)} ≠ ${asText(value)}`) }
    }
  }
  t.equal(differences, 0, `${what}: the same geometries and properties`)
}

t.test('the collection links every format of the items', async (t) => {
  const links = ((await get('/collections/sources')).json() as { links: Array<{ rel: string, type: string }> }).links
  for (const type of ['application/geo+json', 'application/geo+json-seq', 'application/x-ndjson', 'text/csv', 'application/flatgeobuf']) t.ok(links.some((l) => l.rel === 'items' && l.type === type), type)
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, unknown> }> } }> }
  const content = doc.paths['/collections/sources/items']?.get.responses['200']?.content ?? {}
  for (const type of ['application/geo+json-seq', 'application/x-ndjson', 'text/csv', 'application/flatgeobuf', 'text/html']) t.ok(type in content, `/openapi.json: ${type}`)
})

t.test('each format by f= and by Accept, with its media type', async (t) => {
  for (const [f, type] of [['geojsonseq', 'application/geo+json-seq'], ['ndjson', 'application/x-ndjson'], ['csv', 'text/csv'], ['fgb', 'application/flatgeobuf']]) {
    t.match((await get(`/collections/sources/items?f=${f}`)).headers['content-type'], type, `f=${f}`)
    t.match((await get('/collections/sources/items', { accept: `${type}, application/json;q=0.5` })).headers['content-type'], type, `Accept: ${type}`)
  }
  const seq = (await get('/collections/sources/items?f=geojsonseq&limit=3')).body
  t.equal(seq.split('\u001e').length, 4, 'RFC 8142: each record after RS')
  t.ok(seq.endsWith('\n'))
  t.equal((await get('/collections/sources/items', { accept: 'image/png' })).statusCode, 406)
  t.equal((await get('/collections/sources/items?f=shp')).statusCode, 400)
})

t.test('the next page of a format: a Link header, in the same format', async (t) => {
  const first = await get('/collections/sources/items?f=csv&limit=20')
  const link = String(first.headers.link)
  t.match(link, /rel="next"; type="text\/csv"/)
  const next = /<([^>]+)>/.exec(link)?.[1] as string
  const second = await get(new URL(next).pathname + new URL(next).search)
  t.equal(first.body.trim().split('\r\n').length - 1 + second.body.trim().split('\r\n').length - 1, expected.size, 'the two pages hold every feature')
  t.notOk(second.headers.link, 'no next link on the last page')
})

t.test('read back by GDAL', { skip: hasGdal ? false : 'gdal-bin is not installed' }, async (t) => {
  sameFeatures(t, await gdalFeatures(await download('/collections/sources/items?f=fgb&limit=1000', 'items.fgb')), 'FlatGeobuf')
  sameFeatures(t, await gdalFeatures(await download('/collections/sources/items?f=geojsonseq&limit=1000', 'items.geojsons')), 'GeoJSONSeq')
  sameFeatures(t, await gdalFeatures(await download('/collections/sources/items?limit=1000', 'items.ndjson', { accept: 'application/x-ndjson' })), 'NDJSON')
  sameFeatures(t, await gdalFeatures(await download('/collections/sources/items?f=csv&limit=1000', 'items.csv'), ['-oo', 'GEOM_POSSIBLE_NAMES=WKT', '-oo', 'KEEP_GEOM_COLUMNS=NO']), 'CSV')
  // A streamed page (more than ITEMS_ROWS_PER_QUERY rows) too.
  sameFeatures(t, await gdalFeatures(await download('/collections/sources/items?f=fgb&limit=10000', 'all.fgb')), 'FlatGeobuf, streamed page')
  const info = spawnSync('ogrinfo', ['-ro', '-al', '-so', join(dir, 'items.fgb')], { encoding: 'utf8' }).stdout
  t.match(info, /Geometry: Polygon/)
  t.match(info, /Feature Count: 31/)
  for (const field of ['id: String', 'feature_id: String', 'start_at: DateTime', 'version: Integer64', 'area_m2: Real', 'conflict: Integer\\(Boolean\\)']) t.match(info, new RegExp(field))
  // The spatial index: the header names its node size, and GDAL answers -spat from the tree.
  const bytes = await readFile(join(dir, 'items.fgb'))
  const bb = new flatbuffers.ByteBuffer(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length))
  bb.setPosition(8)
  t.equal(fromByteBuffer(bb).indexNodeSize, 16, 'a packed R-tree of node size 16')
  const spat = spawnSync('ogrinfo', ['-ro', '-al', '-q', '-spat', '2', '1', '2.2', '1.2', join(dir, 'items.fgb')], { encoding: 'utf8' })
  t.equal((spat.stdout.match(/OGRFeature\(/g) ?? []).length, 1, 'one box in that window (a-8)')
  t.match(spat.stdout, /feature_id \(String\) = a-8/)
})

t.test('GeoJSONSeq and NDJSON records are the GeoJSON page\'s Features, whatever the attributes hold', async (t) => {
  // The sequences pass PostgreSQL's Feature texts through, split at their top-level commas
  // (seqRecords): attributes full of commas, quotes, brackets, backslashes and line breaks, and
  // arrays of objects, must not move a split (`closers` and `escaped` would close the Feature
  // early for a scan that did not skip strings, or their escaped quotes, wherever the Feature is
  // in the page). Another organisation's, so the counts above hold.
  const editorC = await session(ctx, 'editor', 'org-c')
  const hostile = { ...feature('c-0', { coordinates: box(40, 40) }), properties: {
    start_at: '2024-01-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z',
    note: 'a,"b"},{"type":"Feature"\n\\\u001e é 😀', nested: [{ type: 'Feature', id: ',' }, [1, [2, { '}': '{' }]]], closers: '}},', escaped: 'q"}},', empty: {}, none: [], big: 1e21, negative: -0.5
  } }
  await seed(editorC.headers, [hostile, feature('c-1', { coordinates: box(41, 41) }), feature('c-2', { coordinates: box(42, 42) })])
  const page = (await app.inject({ method: 'GET', url: '/collections/sources/items?limit=10', headers: editorC.headers })).json() as { features: unknown[] }
  t.equal(page.features.length, 3)
  const c0 = (page.features as Array<{ properties: Record<string, unknown> }>).find((f) => f.properties.feature_id === 'c-0')
  t.same([c0?.properties.note, c0?.properties.nested, c0?.properties.closers, c0?.properties.escaped], [hostile.properties.note, hostile.properties.nested, hostile.properties.closers, hostile.properties.escaped], 'the attributes are kept as sent')
  for (const [f, rs] of [['geojsonseq', true], ['ndjson', false]] as const) {
    const body = (await app.inject({ method: 'GET', url: `/collections/sources/items?limit=10&f=${f}`, headers: editorC.headers })).body
    const lines = body.split('\n')
    t.equal(lines.pop(), '', `${f}: ends with a line feed`)
    t.ok(lines.every((l) => l.startsWith('\u001e') === rs), `${f}: ${rs ? 'each record after RS' : 'no RS'}`)
    t.same(lines.map((l) => JSON.parse(rs ? l.slice(1) : l) as unknown), page.features, `${f}: the same Features, one a record`)
  }
})

t.test('FlatGeobuf and CSV: an attribute named after an Object.prototype member, absent from a later Feature, is empty there', async (t) => {
  // A json column (the first Feature's value is an object) named toString: a later Feature
  // without it once handed the encoder Object.prototype.toString, and the page was a 500.
  const editorD = await session(ctx, 'editor', 'org-d')
  const first = { ...feature('d-0', { coordinates: box(50, 50) }), properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z', toString: { note: 'x' }, constructor: null } }
  const later = { ...feature('d-1', { coordinates: box(51, 51) }), properties: { start_at: '2024-03-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z' } }
  await seed(editorD.headers, [first, later])
  const res = await app.inject({ method: 'GET', url: '/collections/sources/items?limit=10&f=fgb&sortby=start_at', headers: editorD.headers })
  t.equal(res.statusCode, 200, res.statusCode === 200 ? 'a FlatGeobuf file' : res.body)
  const features: Array<{ properties: Record<string, unknown> }> = []
  for await (const f of deserialize(new Uint8Array(res.rawPayload)) as AsyncGenerator<{ properties: Record<string, unknown> }>) features.push(f)
  const byFeatureId = new Map(features.map((f) => [f.properties.feature_id, f.properties]))
  t.same(byFeatureId.get('d-0')?.toString, { note: 'x' }, 'the first Feature\'s value')
  t.notOk(Object.hasOwn(byFeatureId.get('d-1') ?? {}, 'toString'), 'none on the later Feature')
  const csv = (await app.inject({ method: 'GET', url: '/collections/sources/items?limit=10&f=csv&sortby=start_at', headers: editorD.headers })).body
  t.match(csv.split('\r\n')[0], /,toString,/, 'CSV: a toString column')
  t.notMatch(csv, /undefined|function|\[object/, 'CSV: empty on the later Feature, not Object.prototype\'s')
})

t.test('FlatGeobuf and CSV pages: a column for an attribute only a later Feature holds, and one for values of two types', async (t) => {
  // The columns come from every Feature of the page's query, not from its first alone.
  const editorE = await session(ctx, 'editor', 'org-e')
  const props = (start: string, attributes: Record<string, unknown>) => ({ start_at: start, end_at: '2024-12-31T00:00:00Z', ...attributes })
  await seed(editorE.headers, [
    { ...feature('e-0', { coordinates: box(60, 60) }), properties: props('2024-01-01T00:00:00Z', { height: 3 }) },
    { ...feature('e-1', { coordinates: box(61, 61) }), properties: props('2024-02-01T00:00:00Z', { height: 'tall', colour: 'red' }) }
  ])
  const res = await app.inject({ method: 'GET', url: '/collections/sources/items?limit=10&f=fgb&sortby=start_at', headers: editorE.headers })
  t.equal(res.statusCode, 200, res.statusCode === 200 ? 'a FlatGeobuf file' : res.body)
  const features: Array<{ properties: Record<string, unknown> }> = []
  for await (const f of deserialize(new Uint8Array(res.rawPayload)) as AsyncGenerator<{ properties: Record<string, unknown> }>) features.push(f)
  const byFeatureId = new Map(features.map((f) => [f.properties.feature_id, f.properties]))
  t.same([byFeatureId.get('e-0')?.height, byFeatureId.get('e-1')?.height], ['3', 'tall'], 'a number beside a string: both, as text')
  t.equal(byFeatureId.get('e-1')?.colour, 'red', 'the later Feature\'s own attribute')
  const csv = (await app.inject({ method: 'GET', url: '/collections/sources/items?limit=10&f=csv&sortby=start_at', headers: editorE.headers })).body
  const [header, first, second] = csv.split('\r\n')
  const at = (row: string | undefined, name: string): string | undefined => row?.replace(/"[^"]*"/g, 'W').split(',')[(header ?? '').split(',').indexOf(name)]
  t.same([at(first, 'height'), at(second, 'height'), at(second, 'colour')], ['3', 'tall', 'red'], 'CSV: the same columns')
})

t.test('an empty page in every format is still a file GDAL opens', { skip: hasGdal ? false : 'gdal-bin is not installed' }, async (t) => {
  for (const [f, ext] of [['fgb', 'fgb'], ['csv', 'csv']]) {
    const file = await download(`/collections/sources/items?f=${f}&feature_id=none`, `empty.${ext}`)
    t.equal(spawnSync('ogrinfo', ['-ro', '-al', '-so', file]).status, 0, `${f}: opens`)
  }
})

t.test('f=html: the page shell, without a token, for each resource', async (t) => {
  for (const url of ['/?f=html', '/collections?f=html', '/collections/sources?f=html', '/collections/sources/items?f=html', `/collections/sources/items/${reference.features[0]?.id ?? ''}?f=html`]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
    t.match(res.headers['content-type'], 'text/html', url)
    t.match(res.body, /map\/static\/browse\.js/, url)
    t.match(res.headers['content-security-policy'], /script-src 'self'/, `${url}: the map page's CSP`)
  }
  const browser = await app.inject({ method: 'GET', url: '/collections/sources/items', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
  t.match(browser.headers['content-type'], 'text/html', 'a browser\'s Accept')
  t.equal((await app.inject({ method: 'GET', url: '/collections/sources/items?f=json' })).statusCode, 401, 'JSON still needs a token')
})

t.test('crs= in the file formats: FlatGeobuf names the EPSG code, CSV and FlatGeobuf hold x east, y north; GeoJSONSeq the CRS\'s axis order', { skip: hasGdal ? false : 'gdal-bin is not installed' }, async (t) => {
  // a-0 is the box (0, 0)–(0.25, 0.25): in EPSG:3857 x = 0 m to 27,830 m east; in EPSG:4326 latitude first.
  const mercator = await gdalFeatures(await download('/collections/sources/items?f=fgb&limit=1000&crs=http://www.opengis.net/def/crs/EPSG/0/3857', 'items-3857.fgb'))
  const info = spawnSync('ogrinfo', ['-ro', '-al', '-so', join(dir, 'items-3857.fgb')], { encoding: 'utf8' }).stdout
  t.match(info, /ID\["EPSG",3857\]|EPSG","3857"|Pseudo-Mercator/, 'the header names EPSG:3857')
  const a0 = [...mercator.values()].find((f) => f.properties.feature_id === 'a-0')
  const xs = (a0?.geometry.coordinates[0] ?? []).map((p) => p[0] as number)
  t.ok(Math.abs(Math.max(...xs) - 27_829.87) < 1, `x in metres east: ${Math.max(...xs)}`)
  const latLon = await gdalFeatures(await download('/collections/sources/items?f=csv&limit=1000&crs=EPSG:4326', 'items-4326.csv'), ['-oo', 'GEOM_POSSIBLE_NAMES=WKT', '-oo', 'KEEP_GEOM_COLUMNS=NO'])
  const b = [...latLon.values()].find((f) => f.properties.feature_id === 'a-1')?.geometry.coordinates[0] ?? []
  t.same([Math.min(...b.map((p) => p[0] as number)), Math.min(...b.map((p) => p[1] as number))], [1, 0], 'CSV WKT: x = longitude, y = latitude (a-1 is at longitude 1, latitude 0)')
  const seq = (await get('/collections/sources/items?f=geojsonseq&limit=1000&crs=EPSG:4326')).body.split('\n').filter((l) => l.includes('"a-1"'))
  const a1 = JSON.parse(seq[0]?.replace('\u001e', '') ?? '{}') as Feature
  t.same(a1.geometry.coordinates[0]?.[0], [0, 1], 'GeoJSONSeq in EPSG:4326: latitude, longitude (a-1 is at longitude 1, latitude 0)')
})
