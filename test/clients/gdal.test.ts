// GDAL's OAPIF driver (Debian's gdal-bin, 3.6) reading the service as QGIS does, over a real
// socket, with the token in GDAL_HTTP_HEADERS: ogrinfo sees the count, the geometry type and
// typed fields; ogr2ogr copies an organisation's sources page by page exactly once, with the same
// geometries and nothing of another organisation; -spat and a -where on a date field give the
// sets the equivalent SQL gives.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig, tempDir } from '../helper.js'

const hasGdal = spawnSync('ogrinfo', ['--version']).status === 0
if (backend === 'embedded') {
  // The comparisons read the database beside the running service, which an embedded data
  // directory (one process at a time) does not allow; the API is the same on both backends.
  t.plan(0, 'server backend only (npm run test:server)')
} else if (!hasGdal && process.env.CI !== 'true') {
  t.plan(0, 'gdal-bin is not installed (apt-get install gdal-bin; .ci/run installs it)')
} else {
  await gdal()
}

async function gdal (): Promise<void> {
  const target = await createDatabase(t)
  const { db: setup } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const a = await addAccount(setup, { role: 'editor', organisation: 'org-a' })
  const b = await addAccount(setup, { role: 'editor', organisation: 'org-b' })
  await setup.destroy()
  const service = await startService(t, target)
  const login = async (email: string, password: string): Promise<string> =>
    ((await (await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })).json()) as { token: string }).token
  const tokenA = await login(a.email, a.password)
  const tokenB = await login(b.email, b.password)
  const box = (x: number, y: number) => [[[x, y], [x + 0.5, y], [x + 0.5, y + 0.5], [x, y + 0.5], [x, y]]]
  const post = async (token: string, features: unknown[]) => {
    const res = await fetch(`${service.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(...features)) })
    if (res.status !== 201) throw new Error(`seeding: ${res.status} ${await res.text()}`)
  }
  await post(tokenA, Array.from({ length: 55 }, (_, i) => feature(`a-${i}`, { coordinates: box(i % 11, Math.floor(i / 11)), start: `2024-0${1 + (i % 6)}-01T00:00:00Z`, end: '2024-12-01T00:00:00Z' })))
  await post(tokenB, Array.from({ length: 5 }, (_, i) => feature(`b-${i}`, { coordinates: box(i, 0) })))

  const dir = await tempDir(t, 'sr-gdal-')
  const env = { ...process.env, GDAL_HTTP_HEADERS: `Authorization: Bearer ${tokenA}`, CPL_DEBUG: 'OFF' }
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 120_000 })
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`)
    // GDAL goes on after an ERROR (a rejected API document: it then filters on the client).
    if (/ERROR/.test(r.stderr)) throw new Error(`${cmd} ${args.join(' ')} printed: ${r.stderr}`)
    return r.stdout
  }
  const source = `OAPIF:${service.base}/`
  /** ogr2ogr to GeoJSON (optionally through a GeoPackage first), as { feature_id: coordinates }. */
  const copy = async (name: string, extra: string[]): Promise<Map<string, unknown>> => {
    const out = join(dir, `${name}.geojson`)
    run('ogr2ogr', ['-f', 'GeoJSON', out, source, 'sources', ...extra])
    const fc = JSON.parse(await readFile(out, 'utf8')) as { features: Array<{ properties: { feature_id: string }, geometry: { coordinates: unknown } }> }
    return new Map(fc.features.map((f) => [f.properties.feature_id, f.geometry.coordinates]))
  }
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  t.teardown(() => db.destroy())
  const sqlSet = async (where: ReturnType<typeof sql>) =>
    (await sql<{ feature_id: string }>`SELECT feature_id FROM sources WHERE organisation = 'org-a' AND ${where} ORDER BY 1`.execute(db)).rows.map((r) => r.feature_id)

  t.test('ogrinfo: the count (numberMatched), Polygon, typed fields', async (t) => {
    const info = run('ogrinfo', ['-ro', '-al', '-so', source])
    t.match(info, /Feature Count: 55\n/)
    t.match(info, /Geometry: Polygon\n/)
    for (const field of ['feature_id: String', 'start_at: DateTime', 'end_at: DateTime', 'created_at: DateTime', 'area_m2: Real']) t.match(info, field)
  })

  t.test('ogr2ogr to a GeoPackage, 7 per page: each source once, the same geometries, no other organisation', async (t) => {
    const gpkg = join(dir, 'copy.gpkg')
    run('ogr2ogr', ['-f', 'GPKG', gpkg, source, 'sources', '-oo', 'PAGE_SIZE=7'])
    const out = join(dir, 'from-gpkg.geojson')
    run('ogr2ogr', ['-f', 'GeoJSON', out, gpkg, 'sources'])
    const fc = JSON.parse(await readFile(out, 'utf8')) as { features: Array<{ properties: { feature_id: string }, geometry: { coordinates: unknown } }> }
    const ids = fc.features.map((f) => f.properties.feature_id)
    t.equal(ids.length, 55, '55 features copied')
    t.equal(new Set(ids).size, 55, 'each exactly once')
    t.same([...ids].sort(), await sqlSet(sql`true`), 'exactly org-a\'s sources')
    const stored = new Map((await sql<{ feature_id: string, g: string }>`SELECT feature_id, ST_AsGeoJSON(geom, 15) AS g FROM sources WHERE organisation = 'org-a'`.execute(db)).rows.map((r) => [r.feature_id, (JSON.parse(r.g) as { coordinates: unknown }).coordinates]))
    t.same(new Map(fc.features.map((f) => [f.properties.feature_id, f.geometry.coordinates])), stored, 'the same geometries as in PostGIS')
  })

  t.test('-spat and a -where on a date field give the sets of the equivalent SQL', async (t) => {
    const spat = await copy('spat', ['-spat', '0', '0', '1.2', '1.2'])
    t.same([...spat.keys()].sort(), await sqlSet(sql`ST_Intersects(geom, ST_MakeEnvelope(0, 0, 1.2, 1.2, 4326))`))
    // GDAL sends a -where on a date field as OGC `datetime`, whose match is the period.
    const where = await copy('where', ['-where', "start_at >= '2024/03/01' AND start_at <= '2024/03/31'"])
    const expected = await sqlSet(sql`period && tstzrange('2024-03-01Z', '2024-03-31Z', '[]')`)
    t.ok(expected.length > 0 && expected.length < 55, `a proper subset (${expected.length})`)
    t.same([...where.keys()].sort(), expected)
  })

  /** The items requests the service logged since `from`, decoded. */
  const itemsRequested = (from: number): string[] => service.lines.slice(from).flatMap((line) => {
    const url = (JSON.parse(line) as { req?: { url?: string } }).req?.url
    return url?.startsWith('/collections/sources/items') === true ? [decodeURIComponent(url)] : []
  })

  t.test('-where feature_id = …: no ERROR, and the filter reaches the service as ?feature_id=', async (t) => {
    const from = service.lines.length
    t.same([...(await copy('feature-id', ['-where', "feature_id = 'a-7'"])).keys()], ['a-7'])
    const urls = itemsRequested(from)
    // GDAL reads one unfiltered page first, for the fields; then asks with the filter.
    t.ok(urls.some((u) => u.includes('feature_id=a-7')), `asked with feature_id: ${urls.join(' ')}`)
  })

  t.test('the date case: a comparison on a date field is sent as datetime (the period); a CQL2 filter in the URL is exact', async (t) => {
    // GDAL 3.6 sends start_at >= '2024/03/01' as datetime=2024-03-01T/.., whatever the date field:
    // the sources whose period reaches past 1 March, those that started before it included.
    let from = service.lines.length
    const after = await copy('date', ['-where', "start_at >= '2024/03/01'"])
    t.ok(itemsRequested(from).some((u) => u.includes('datetime=2024-03-01T/..')), 'sent as datetime')
    t.same([...after.keys()].sort(), await sqlSet(sql`period && tstzrange('2024-03-01Z', NULL)`))
    t.ok((await sqlSet(sql`lower(period) < '2024-03-01Z'`)).every((id) => after.has(id)), 'sources that started before March included')
    // Exact: the filter in the connection URL, form-encoded as the service's next links are
    // (GDAL adds the URL's parameters to every request unless the link already holds them).
    from = service.lines.length
    const query = new URLSearchParams({ filter: "start_at >= TIMESTAMP('2024-03-01T00:00:00Z')" }).toString()
    const out = join(dir, 'date-cql2.geojson')
    run('ogr2ogr', ['-f', 'GeoJSON', out, `OAPIF:${service.base}/collections/sources?${query}`, 'sources', '-oo', 'PAGE_SIZE=10'])
    const fc = JSON.parse(await readFile(out, 'utf8')) as { features: Array<{ properties: { feature_id: string } }> }
    const expected = await sqlSet(sql`lower(period) >= '2024-03-01Z'`)
    t.ok(expected.length > 10, `more than a page (${expected.length})`)
    t.same(fc.features.map((f) => f.properties.feature_id).sort(), expected)
    t.ok(itemsRequested(from).every((u) => u.includes(decodeURIComponent(query))), 'filtered by the service')
  })

  t.test('-where on other fields, with and without -spat: the sets of the equivalent SQL; what reached the service', async (t) => {
    const from = service.lines.length
    const cases: Array<[string, string[], ReturnType<typeof sql>]> = [
      ['or', ['-where', "feature_id = 'a-3' OR feature_id = 'a-17'"], sql`feature_id IN ('a-3', 'a-17')`],
      ['like', ['-where', "feature_id LIKE 'a-1%'"], sql`feature_id LIKE 'a-1%'`],
      ['number', ['-where', 'area_m2 > 3070000000'], sql`area_m2 > 3070000000`],
      ['in', ['-where', "feature_id IN ('a-1', 'a-2', 'a-40') AND NOT (feature_id = 'a-2')"], sql`feature_id IN ('a-1', 'a-40')`],
      ['spat-where', ['-spat', '0', '0', '2.2', '2.2', '-where', "feature_id LIKE 'a-2%'"], sql`ST_Intersects(geom, ST_MakeEnvelope(0, 0, 2.2, 2.2, 4326)) AND feature_id LIKE 'a-2%'`]
    ]
    for (const [name, args, where] of cases) {
      const expected = await sqlSet(where)
      t.ok(expected.length > 0 && expected.length < 55, `${name}: a proper subset (${expected.length})`)
      t.same([...(await copy(name, args)).keys()].sort(), expected, name)
    }
    // What GDAL 3.6 sent: OR, LIKE, IN, NOT and comparisons of numbers are evaluated by GDAL
    // on the pages it reads (it builds no CQL2); only -spat reaches the service.
    const urls = itemsRequested(from)
    t.ok(urls.length > 0, 'the requests are in the log')
    t.comment(`GDAL ${run('ogrinfo', ['--version']).trim()} requested:\n${[...new Set(urls)].join('\n')}`)
    t.ok(urls.some((u) => u.includes('bbox=')), '-spat reaches the service as bbox')
  })
}
