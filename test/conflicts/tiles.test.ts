// The conflicts tile layer (issue 47, point 1): the overlaps of the caller's unresolved conflicts
// as MVT (layer "conflicts", id, state, version), only the caller's; its ETag changes with a
// stance change and with a resolution; an empty tile is 204.
import t from 'tap'
import { build, collection, feature, session } from '../helper.js'
import { type TileZxy, decode, tileOf } from '../tiles/mvt.js'

const ctx = await build(t)
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const c = await session(ctx, 'editor', 'org-c')
const admin = await session(ctx, 'admin', 'org-admin')

type Headers = Record<string, string>
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]
async function create (headers: Headers, coordinates: number[][][]): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(`f-${Math.random()}`, { coordinates })) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().sources[0].id
}
const url = ([z, x, y]: TileZxy): string => `/collections/conflicts/tiles/WebMercatorQuad/${z}/${y}/${x}`
const get = async (tile: TileZxy, headers: Headers, extra: Headers = {}) => await app.inject({ method: 'GET', url: url(tile), headers: { ...headers, ...extra } })

const mine = await create(a.headers, box(80, 20, 0.1, 0.1))
await create(b.headers, box(80.05, 20, 0.1, 0.1))
const [conflict] = (await app.inject({ method: 'GET', url: '/conflicts', headers: a.headers })).json().features.map((f: { id: string }) => f.id) as string[]
const tile = tileOf(80.07, 20.05, 9)

t.test('the overlap, with the id, state and version, to both parties only', async (t) => {
  const res = await get(tile, a.headers)
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.headers['content-type'], 'application/vnd.mapbox-vector-tile')
  t.equal(res.headers['cache-control'], 'private, no-cache')
  const features = decode(res.rawPayload, tile, 'conflicts')
  t.equal(features.length, 1)
  t.same(features[0]?.properties, { id: conflict, state: 'open', version: 1 })
  // The overlap only: its longitudes lie within 80.05–80.1, not the whole of a's source.
  const lons = (features[0]?.geometry.coordinates as number[][][]).flat().map((p) => p[0] as number)
  t.ok(Math.min(...lons) > 80.049 && Math.max(...lons) < 80.101, `the overlap (${Math.min(...lons)}–${Math.max(...lons)})`)
  t.same(decode(res.rawPayload, tile, 'sources'), [], 'no sources layer')
  t.equal(decode((await get(tile, b.headers)).rawPayload, tile, 'conflicts').length, 1, 'the other party sees it')
  t.equal(decode((await get(tile, admin.headers)).rawPayload, tile, 'conflicts').length, 1, 'an admin sees it')
  t.equal((await get(tile, c.headers)).statusCode, 204, 'a third organisation: nothing')
  t.equal((await get(tileOf(10, 10, 9), a.headers)).statusCode, 204, 'elsewhere: nothing')
  t.equal((await app.inject({ method: 'GET', url: url(tile) })).statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: '/collections/conflicts/tiles/WebMercatorQuad/23/0/0', headers: a.headers })).statusCode, 404)
})

t.test('a stance change and a resolution change the tile and its ETag', async (t) => {
  const first = await get(tile, a.headers)
  const etag = first.headers.etag as string
  t.match(etag, /^"[\w-]+"$/)
  t.equal((await get(tile, a.headers, { 'if-none-match': etag })).statusCode, 304, 'unchanged: 304')

  const stance = await app.inject({ method: 'POST', url: `/conflicts/${conflict}/stance`, headers: { ...a.headers, 'if-match': 'W/"1"' }, payload: { stance: 'acknowledged' } })
  t.equal(stance.statusCode, 200, stance.body)
  const after = await get(tile, a.headers, { 'if-none-match': etag })
  t.equal(after.statusCode, 200, 'the stance change: drawn again')
  t.not(after.headers.etag, etag)
  t.same(decode(after.rawPayload, tile, 'conflicts')[0]?.properties, { id: conflict, state: 'in_review', version: 2 })

  const dispute = await app.inject({ method: 'POST', url: `/conflicts/${conflict}/stance`, headers: { ...b.headers, 'if-match': 'W/"2"' }, payload: { stance: 'acknowledged' } })
  t.equal(dispute.statusCode, 200, dispute.body)
  const same = await get(tile, a.headers, { 'if-none-match': after.headers.etag as string })
  t.equal(same.statusCode, 200, 'the state stays in_review, the version moves: drawn again')
  t.equal(decode(same.rawPayload, tile, 'conflicts')[0]?.properties.version, 3)

  // The resolution: a's source moves away.
  const read = await app.inject({ method: 'GET', url: `/sources/?id=${mine}`, headers: a.headers })
  const moved = await app.inject({ method: 'PUT', url: `/sources/?id=${mine}`, headers: { ...a.headers, 'if-match': read.headers.etag as string }, payload: { ...(read.json() as Record<string, unknown>), geometry: { type: 'Polygon', coordinates: box(80, 20, 0.04, 0.1) } } })
  t.equal(moved.statusCode, 200, moved.body)
  const gone = await get(tile, a.headers, { 'if-none-match': same.headers.etag as string })
  t.equal(gone.statusCode, 204, 'resolved: no longer drawn')
})
