// GDAL's MVT driver (Debian's gdal-bin, 3.6) reading one tile over HTTP with the token in
// GDAL_HTTP_HEADERS (3.6 opens a tile URL only with a .pbf suffix, which the route allows): it decodes the layer "sources" with its fields, and counts as many features
// as PostGIS finds sources intersecting the tile with its buffer, of the caller's organisation.
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
