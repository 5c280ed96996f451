// Files written by GIS tools post as they are (issue 45, point 5). A GeoPackage of multipart
// parcels with attributes (made with ogr2ogr from GeoJSON, -nlt MULTIPOLYGON) exported by
// `ogr2ogr -f GeoJSON` (Debian's gdal-bin, 3.6): as is (no id: ?id_property=parcel_no), with
// -lco RFC7946=YES (one-part MultiPolygons written as Polygons, which stay Polygons), with
// -preserve_fid and bbox (numeric ids), with -lco ID_FIELD (string ids); reprojected to EPSG:28992
// its crs member is a 400 naming the CRS expected. And one written by QGIS's Python API
// (QgsVectorFileWriter, GeoJSON: a `crs` naming CRS84, Date fields), qgis-write-geojson.py. Each
// file goes to the service byte for byte; the geometry, the ids and the periods read back.
// Both backends: the tools only write files, the service is reached with inject.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, expectError, session, tempDir } from '../helper.js'

const hasGdal = spawnSync('ogr2ogr', ['--version']).status === 0
const PYTHON = '/usr/bin/python3'
const QGIS_ENV = { ...process.env, QT_QPA_PLATFORM: 'offscreen' }
const hasQgis = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import qgis.core'], { env: QGIS_ENV }).status === 0

const ctx = await build(t)
const { app } = ctx
const editor = await session(ctx, 'editor', 'org-a')
// Another organisation posts a second export of the same parcels (their ids are its own).
const other = await session(ctx, 'editor', 'org-b')
type Who = typeof editor
const dir = await tempDir(t, 'sr-gis-files-')

const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string => {
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 120_000 })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

interface Posted { status: number, body: string, ids: string[] }
/** The file's bytes as the body, unchanged. */
async function postFile (file: string, query = '', who: Who = editor): Promise<Posted> {
  const res = await app.inject({ method: 'POST', url: `/sources${query}`, headers: { ...who.headers, 'content-type': 'application/geo+json' }, payload: await readFile(file) })
  return { status: res.statusCode, body: res.body, ids: res.statusCode === 201 ? (res.json() as { sources: Array<{ id: string }> }).sources.map((s) => s.id) : [] }
}

interface Read { type: string, geometry: { type: string, coordinates: unknown }, properties: Record<string, unknown> }
const read = async (id: string, who: Who): Promise<Read> => (await app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers: who.headers })).json()

/** Each posted source read back against the file's feature at its index: geometry, id, period. */
async function readsBack (t: Test, file: string, posted: Posted, idOf: (f: { id?: unknown, properties: Record<string, unknown> }) => string, who: Who = editor): Promise<void> {
  const fc = JSON.parse(await readFile(file, 'utf8')) as { features: Array<{ id?: unknown, properties: Record<string, unknown>, geometry: { type: string, coordinates: unknown } }> }
  t.equal(posted.ids.length, fc.features.length, 'every feature created')
  for (const [i, f] of fc.features.entries()) {
    const source = await read(posted.ids[i] as string, who)
    t.same(source.geometry, { type: f.geometry.type, coordinates: f.geometry.coordinates }, `feature ${i}: the ${f.geometry.type} as written`)
    t.equal(source.properties.feature_id, idOf(f), `feature ${i}: its id`)
    t.equal(source.properties.start_at, '2024-01-01T00:00:00Z')
    t.equal(source.properties.end_at, '2025-01-01T00:00:00Z')
    // Every other member of the file's properties (parcel_no, name, land_use, hectares, and
    // what the tool added) is kept as an attribute and reads back as written.
    const attributes = Object.entries(f.properties).filter(([k]) => k !== 'start_at' && k !== 'end_at')
    t.ok(attributes.length > 0, `feature ${i}: the file has attributes`)
    for (const [k, v] of attributes) t.same(source.properties[k], v, `feature ${i}: attribute ${k}`)
  }
}

if (!hasGdal && process.env.CI !== 'true') {
  t.test('ogr2ogr', async (t) => { t.plan(0, 'gdal-bin is not installed (apt-get install gdal-bin; .ci/run installs it)') })
} else {
  const parcels = {
    type: 'FeatureCollection',
    features: [
      ['NL-1', 'Noord', 'forest', 2.5, [[[[5, 52], [5.01, 52], [5.01, 52.01], [5, 52.01], [5, 52]]], [[[5.02, 52], [5.03, 52], [5.03, 52.01], [5.02, 52.01], [5.02, 52]]]]],
      ['NL-2', 'Zuid', 'grass', 1, [[[[5.1, 52], [5.11, 52], [5.11, 52.01], [5.1, 52.01], [5.1, 52]], [[5.102, 52.002], [5.104, 52.002], [5.104, 52.004], [5.102, 52.004], [5.102, 52.002]]]]],
      ['NL-3', 'Oost', 'crops', 0.75, [[[[5.2, 52], [5.21, 52], [5.21, 52.01], [5.2, 52]]], [[[5.22, 52], [5.23, 52], [5.23, 52.01], [5.22, 52]]], [[[5.24, 52], [5.25, 52], [5.25, 52.01], [5.24, 52]]]]]
    ].map(([parcelNo, name, landUse, hectares, coordinates]) => ({
      type: 'Feature',
      properties: { parcel_no: parcelNo, name, land_use: landUse, hectares, start_at: '2024-01-01T00:00:00Z', end_at: '2025-01-01T00:00:00Z' },
      geometry: { type: 'MultiPolygon', coordinates }
    }))
  }
  const seed = join(dir, 'seed.geojson')
  await writeFile(seed, JSON.stringify(parcels))
  const gpkg = join(dir, 'parcels.gpkg')
  run('ogr2ogr', ['-f', 'GPKG', gpkg, seed, '-nln', 'parcels', '-nlt', 'MULTIPOLYGON'])
  const exported = (name: string, args: string[]): string => {
    const out = join(dir, `${name}.geojson`)
    run('ogr2ogr', ['-f', 'GeoJSON', out, gpkg, 'parcels', ...args])
    return out
  }
  const byParcelNo = (f: { properties: Record<string, unknown> }) => f.properties.parcel_no as string

  t.test('ogr2ogr -f GeoJSON from a GeoPackage: no id, so ?id_property=parcel_no; MultiPolygons kept', async (t) => {
    const file = exported('plain', [])
    t.match(await readFile(file, 'utf8'), /"name": "parcels"/, 'the file carries ogr2ogr\'s name member')
    const without = expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/geo+json' }, payload: await readFile(file) }), 400, 'INVALID_GEOJSON')
    t.match(without.details?.[0], { pointer: '/features/0/id', message: /id_property/ }, 'without id_property: how to give the ids')
    const posted = await postFile(file, '?id_property=parcel_no')
    t.equal(posted.status, 201, posted.body)
    await readsBack(t, file, posted, byParcelNo)
  })

  t.test('ogr2ogr -lco RFC7946=YES: a one-part MultiPolygon it writes as a Polygon stays a Polygon', async (t) => {
    const file = exported('rfc7946', ['-lco', 'RFC7946=YES'])
    const types = (JSON.parse(await readFile(file, 'utf8')) as { features: Array<{ geometry: { type: string } }> }).features.map((f) => f.geometry.type)
    t.same(types, ['MultiPolygon', 'Polygon', 'MultiPolygon'], 'GDAL wrote one part as a Polygon')
    const posted = await postFile(file, '?id_property=parcel_no', other)
    t.equal(posted.status, 201, posted.body)
    await readsBack(t, file, posted, byParcelNo, other)
  })

  t.test('ogr2ogr -preserve_fid -lco WRITE_BBOX=YES: numeric ids and bbox members', async (t) => {
    const file = exported('fid', ['-preserve_fid', '-lco', 'WRITE_BBOX=YES', '-lco', 'RFC7946=YES'])
    const text = await readFile(file, 'utf8')
    t.match(text, /"id": 1,/, 'GDAL wrote numeric ids')
    t.match(text, /"bbox": \[/)
    const posted = await postFile(file)
    t.equal(posted.status, 201, posted.body)
    await readsBack(t, file, posted, (f) => String(f.id))
  })

  t.test('ogr2ogr -lco ID_FIELD=parcel_no: the parcel numbers as string ids; posted again, a 409 naming each', async (t) => {
    const file = exported('id-field', ['-lco', 'ID_FIELD=parcel_no'])
    t.match(await readFile(file, 'utf8'), /"id": "NL-1"/)
    const again = expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/geo+json' }, payload: await readFile(file) }), 409, 'SOURCE_CONFLICT')
    t.equal(again.details?.length, 3, 'the ids the first file registered through id_property: one detail each')
  })

  t.test('ogr2ogr -t_srs EPSG:28992: its crs member is a 400 naming the CRS expected', async (t) => {
    const file = exported('rd', ['-t_srs', 'EPSG:28992'])
    const body = expectError(t, await app.inject({ method: 'POST', url: '/sources?id_property=parcel_no', headers: { ...editor.headers, 'content-type': 'application/geo+json' }, payload: await readFile(file) }), 400, 'INVALID_GEOJSON')
    t.match(body.details?.[0], { pointer: '/crs', message: /urn:ogc:def:crs:EPSG::28992.*CRS84.*EPSG:4326/ })
  })
}

if (!hasQgis && process.env.CI !== 'true') {
  t.test('QGIS', async (t) => { t.plan(0, 'QGIS is not installed (apt-get install python3-qgis; .ci/run installs it)') })
} else {
  t.test('QGIS\'s QgsVectorFileWriter (GeoJSON, crs CRS84, Date fields): posts unchanged with ?id_property=parcel_no', async (t) => {
    const profile = await tempDir(t, 'sr-qgis-write-')
    const file = join(dir, 'qgis.geojson')
    const out = run(PYTHON, [fileURLToPath(new URL('./qgis-write-geojson.py', import.meta.url)), profile, file], { ...QGIS_ENV, XDG_RUNTIME_DIR: profile })
    const line = out.trim().split('\n').pop() ?? ''
    t.match(JSON.parse(line), { error: 0 }, `QGIS wrote the file: ${line}`)
    t.match(await readFile(file, 'utf8'), /"crs": \{ "type": "name", "properties": \{ "name": "urn:ogc:def:crs:OGC:1.3:CRS84" \} \}/, 'with a crs member naming CRS84')
    const posted = await postFile(file, '?id_property=parcel_no')
    t.equal(posted.status, 201, posted.body)
    await readsBack(t, file, posted, (f) => f.properties.parcel_no as string)
  })
}
