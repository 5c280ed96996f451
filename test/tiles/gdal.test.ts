// GDAL's MVT driver (Debian's gdal-bin, 3.6) over HTTP with the token in GDAL_HTTP_HEADERS (3.6
// opens a tile URL only with a .pbf suffix, which the routes allow). One OGC tile with
// -oo Z= X= Y= (GDAL reads a URL as z/x/y, OGC orders row before column): the layer "sources"
// with its fields, as many features as PostGIS finds in the tile with its buffer, of the
// caller's organisation, where they are. The z/x/y alias: one tile in place without options, an
// empty tile opened as an empty layer, and a zoom level read as a tileset with the TileJSON as
// METADATA_FILE (the tiles of its bounds).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig } from '../helper.js'

const hasGdal = spawnSync('ogrinfo', ['--version']).status === 0
if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): the count is read beside the running service')
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
  await post(tokenA, Array.from({ length: 55 }, (_, i) => feature(`a-${i}`, { coordinates: box(i % 11, Math.floor(i / 11)) })))
  await post(tokenB, Array.from({ length: 5 }, (_, i) => feature(`b-${i}`, { coordinates: box(i + 0.2, 0.2) })))
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  t.teardown(() => db.destroy())

  const env = { ...process.env, GDAL_HTTP_HEADERS: `Authorization: Bearer ${tokenA}`, CPL_DEBUG: 'OFF' }
  const tiles = `${service.base}/collections/sources/tiles/WebMercatorQuad`
  const ogr = (args: string[]): string => {
    const r = spawnSync('ogrinfo', ['-ro', '-al', '-so', ...args], { env, encoding: 'utf8', timeout: 120_000 })
    if (r.status !== 0 || /ERROR/.test(r.stderr)) throw new Error(`ogrinfo ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  /** ogrinfo's Extent line (EPSG:3857) in longitude/latitude. */
  const extentOf = (out: string): number[] => {
    const m = /Extent: \((\S+), (\S+)\) - \((\S+), (\S+)\)/.exec(out)
    if (m === null) throw new Error(`no extent in ${out}`)
    const [x0, y0, x1, y1] = m.slice(1).map(Number) as [number, number, number, number]
    const lon = (x: number) => (x / 20037508.342789244) * 180
    const lat = (y: number) => (Math.atan(Math.exp((y / 20037508.342789244) * Math.PI)) * 360) / Math.PI - 90
    return [lon(x0), lat(y0), lon(x1), lat(y1)]
  }
  const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - (b[i] as number)) < 0.01)

  t.test('the OGC path with -oo Z= -oo X= -oo Y=, and the alias without: the sources where they are', async (t) => {
    // Tile 9/256/255 (x 256, y 255: 0–0.703°E, 0–0.703°N) holds box(0, 0) (0–0.5°) alone, whole.
    const expected = [0, 0, 0.5, 0.5]
    const withOo = extentOf(ogr(['-oo', 'Z=9', '-oo', 'X=256', '-oo', 'Y=255', `MVT:${tiles}/9/255/256.pbf`]))
    t.ok(near(withOo, expected), `OGC path with -oo: ${withOo.join(', ')}`)
    t.ok(near(extentOf(ogr([`MVT:${tiles}/xyz/9/256/255.pbf`])), expected), 'the alias, no options')
    t.notOk(near(extentOf(ogr([`MVT:${tiles}/9/255/256.pbf`])), expected), 'the OGC path without -oo: elsewhere (GDAL reads it as z/x/y)')
  })

  t.test('the alias: an empty tile is an empty layer; a zoom level read whole with the TileJSON as METADATA_FILE', async (t) => {
    t.match(ogr([`MVT:${tiles}/xyz/9/0/0.pbf`]), /Layer name: sources\n[\s\S]*Feature Count: 0\n/)
    const from = service.lines.length
    const out = ogr(['-oo', `METADATA_FILE=${tiles}/tilejson.json`, `MVT:${tiles}/xyz/6`])
    // spawnSync held the event loop: let the service's log lines in.
    await new Promise((resolve) => setTimeout(resolve, 500))
    // org-a's sources span 0–10.5°E, 0–4.5°N: at zoom 6 (5.625° a tile) columns 32–33, rows
    // 31–32, and the neighbours GDAL adds at the bounds' edges; never the 4,096 of the level.
    const asked = service.lines.slice(from).flatMap((l) => /"url":"([^"]*\/xyz\/6\/[^"]*)"/.exec(l)?.[1] ?? [])
    t.ok(asked.length > 0 && asked.length <= 9, `the tiles of the bounds only: ${asked.join(' ')}`)
    t.ok(near(extentOf(out), [0, 0, 10.5, 4.5]), `every org-a source, where it is: ${extentOf(out).join(', ')}`)
    const count = Number(/Feature Count: (\d+)/.exec(out)?.[1])
    t.ok(count >= 55, `each source at least once (${count}; one cut by a tile edge is in each tile)`)
  })

  for (const [z, x, y] of [[7, 64, 63], [5, 16, 15], [9, 257, 254]] as const) {
    t.test(`ogrinfo MVT: tile ${z}/${y}/${x}`, async (t) => {
      const url = `${service.base}/collections/sources/tiles/WebMercatorQuad/${z}/${y}/${x}.pbf`
      const r = spawnSync('ogrinfo', ['-ro', '-al', '-so', '-oo', `Z=${z}`, '-oo', `X=${x}`, '-oo', `Y=${y}`, `MVT:${url}`], { env, encoding: 'utf8', timeout: 120_000 })
      t.equal(r.status, 0, r.stderr)
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sources
        WHERE organisation = 'org-a' AND ST_Intersects(geom, ST_Transform(ST_TileEnvelope(${z}::int, ${x}::int, ${y}::int, margin => 64.0 / 4096), 4326))`.execute(db)
      const expected = rows[0]?.n ?? -1
      t.ok(expected > 0, `${expected} sources in the tile`)
      t.match(r.stdout, new RegExp(`Feature Count: ${expected}\\n`), 'the count of PostGIS')
      t.match(r.stdout, /Layer name: sources/)
      for (const field of ['id: String', 'feature_id: String', 'start_at: String', 'end_at: String', 'area_m2: Real', 'conflict: Integer\\(Boolean\\)']) t.match(r.stdout, new RegExp(field))
    })
  }
}
