// Sources that are odd but legal must be stored and read back; odd input must never be a 500.
// Areas follow RFC 7946 (edges straight in lon/lat): wide, polar and antimeridian-touching
// polygons, and the whole-world box, are readable and measured right. Odd numbers (-0, 1e-400,
// subnormals, 2^53 + 1, 1e400) and odd dates go through POST as raw JSON text, so the client's
// exact spelling reaches the parser.
import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { build, collection, feature, session } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-a')

// WGS 84: the area between the equator and latitude `deg` per radian of longitude (authalic zone).
const A = 6378137
const E2 = 0.0066943799901413165
const E = Math.sqrt(E2)
function zone (deg: number): number {
  const s = Math.sin(deg * Math.PI / 180)
  return A * A * (1 - E2) / 2 * (s / (1 - E2 * s * s) + Math.atanh(E * s) / E)
}
/** Exact area of a lon/lat box on the WGS 84 ellipsoid. */
const boxArea = (w: number, s: number, e: number, n: number): number => (e - w) * Math.PI / 180 * (zone(n) - zone(s))
const box = (w: number, s: number, e: number, n: number) => [[[w, s], [e, s], [e, n], [w, n], [w, s]]]
// The WGS 84 ellipsoid's surface area, a published constant (510,065,621.7 km²).
const EARTH_M2 = 510_065_621_724_088

let n = 0
async function createAndRead (coordinates: unknown): Promise<{ status: number, area: number, body: string }> {
  const created = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature(`odd-${++n}`, { coordinates })) })
  if (created.statusCode !== 201) return { status: created.statusCode, area: NaN, body: created.body }
  const read = await app.inject({ method: 'GET', url: `/sources/?id=${created.json().id as string}`, headers: editor.headers })
  return { status: read.statusCode, area: read.statusCode === 200 ? read.json().properties.area_m2 : NaN, body: read.body }
}

// Parallels and meridians are exact; a slanted edge spanning 80° of latitude is within 2e-9.
const close = (t: Test, actual: number, expected: number, what: string, tolerance = 1e-9): void => {
  t.ok(Math.abs(actual / expected - 1) < tolerance, `${what}: ${actual} vs ${expected}`)
}

t.test('the whole-world box is stored, read back, and measures the whole ellipsoid', async (t) => {
  const r = await createAndRead(box(-180, -90, 180, 90))
  t.equal(r.status, 200, r.body)
  t.ok(Math.abs(r.area - EARTH_M2) < 1, `area ${r.area}`)
})

t.test('a band from -170 to 10 longitude measures half of its latitude zone, not half the globe', async (t) => {
  const r = await createAndRead(box(-170, -10, 10, 10))
  t.equal(r.status, 200, r.body)
  close(t, r.area, boxArea(-170, -10, 10, 10), 'band')
  t.ok(r.area < EARTH_M2 / 10, 'a tenth of the globe at most')
})

t.test('polar caps, antimeridian-touching boxes, small boxes, a hole and a slanted edge', async (t) => {
  const cases: Array<[string, unknown, number]> = [
    ['north polar cap above 80°', box(-180, 80, 180, 90), boxArea(-180, 80, 180, 90)],
    ['south polar cap below -85°', box(-180, -90, 180, -85), boxArea(-180, -90, 180, -85)],
    ['touching the pole', box(0, 89, 10, 90), boxArea(0, 89, 10, 90)],
    ['east of the antimeridian', box(170, 0, 180, 10), boxArea(170, 0, 180, 10)],
    ['west of the antimeridian', box(-180, 0, -170, 10), boxArea(-180, 0, -170, 10)],
    ['a field near Utrecht', box(5.1, 52.0, 5.2, 52.1), boxArea(5.1, 52.0, 5.2, 52.1)],
    ['a 1° box with a 0.5° hole', [box(10, 50, 11, 51)[0], [[10.25, 50.25], [10.25, 50.75], [10.75, 50.75], [10.75, 50.25], [10.25, 50.25]]],
      boxArea(10, 50, 11, 51) - boxArea(10.25, 50.25, 10.75, 50.75)],
    // A triangle whose slanted edge runs from (0, 0) to (90, 80): its area is the box minus the
    // region under the edge, integrated here with 2,000 steps of Simpson's rule.
    ['a wide triangle with a slanted edge', [[[0, 0], [90, 80], [0, 80], [0, 0]]], (() => {
      const steps = 2000
      let under = 0
      for (let i = 0; i <= steps; i++) under += (i === 0 || i === steps ? 1 : i % 2 === 1 ? 4 : 2) * zone(80 * i / steps)
      under *= (Math.PI / 2) / steps / 3
      return (Math.PI / 2) * zone(80) - under
    })()]
  ]
  for (const [what, coordinates, expected] of cases) {
    const r = await createAndRead(coordinates)
    t.equal(r.status, 200, `${what}: ${r.body}`)
    close(t, r.area, expected, what, what.includes('slanted') ? 1e-8 : 1e-9)
  }
})

t.test('an analyst inserting with SQL gets the same area column', async (t) => {
  const rows = await sql<{ area_m2: number }>`SELECT area_m2 FROM sources WHERE feature_id = 'odd-1'`.execute(db)
  t.ok(Math.abs((rows.rows[0]?.area_m2 ?? 0) - EARTH_M2) < 1)
  const fn = await sql<{ a: number }>`SELECT lonlat_area_m2(ST_MakeEnvelope(170, 0, 180, 10, 4326)) AS a`.execute(db)
  close(t, fn.rows[0]?.a ?? 0, boxArea(170, 0, 180, 10), 'lonlat_area_m2()')
})

// A polygon as raw JSON text: `ring` is the exterior ring's positions, spelled as given.
const rawBody = (id: string, ring: string[], start = '"2024-01-01T00:00:00Z"', end = '"2024-06-01T00:00:00Z"'): string =>
  `{"type":"FeatureCollection","features":[{"type":"Feature","id":${JSON.stringify(id)},` +
  `"properties":{"start_at":${start},"end_at":${end}},"geometry":{"type":"Polygon","coordinates":[[${ring.join(',')}]]}}]}`

const postRaw = (body: string) => app.inject({
  method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/json' }, payload: body
})

t.test('-0 in a ring is 0: a ring closed on [-0, 0] and [0, 0] is stored (was a 500)', async (t) => {
  const rings = [
    ['[-0,0]', '[1,0]', '[1,1]', '[0,1]', '[0,0]'],
    ['[0,0]', '[1,0]', '[1,1]', '[0,1]', '[-0,0]'],
    ['[0,-0]', '[1,0]', '[1,1]', '[0,1]', '[0,0]'],
    ['[-0,-0]', '[1,-0]', '[1,1]', '[-0,1]', '[0,0.0]'],
    ['[-0.0,0e5]', '[1,0]', '[1,1]', '[0,1]', '[0,-0e-3]']
  ]
  for (const [i, ring] of rings.entries()) {
    const res = await postRaw(rawBody(`minus-zero-${i}`, ring))
    t.equal(res.statusCode, 201, `${ring.join(',')}: ${res.body}`)
  }
})

// Odd spellings of numbers, put in every position of a valid ring in turn.
const ODD_NUMBERS = [
  '-0', '0.0e0', '-0.0', '1e-400', '-1e-400', '5e-324', '-5e-324', '2.2250738585072014e-308', '4.9406564584124654e-324',
  '9007199254740993', '-9007199254740993', '1e400', '-1e400', '1.7976931348623157e308', '180.00000000000001',
  '179.99999999999999', '90.000000000000001', '-90.0000000000000001', '1E1', '0.1e1', '1e-7', '123456789012345678901234567890',
  '0.30000000000000004', '1.0000000000000002'
]
const BASE = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]

t.test('odd numbers in every coordinate: 201, 400 or 422, never a 500; what is stored reads back', async (t) => {
  const statuses = new Map<number, number>()
  let i = 0
  for (const odd of ODD_NUMBERS) {
    for (let p = 0; p < BASE.length; p++) {
      for (let c = 0; c < 2; c++) {
        const ring = BASE.map((pos, q) => `[${pos.map((v, d) => q === p && d === c ? odd : String(v)).join(',')}]`)
        // The last position mirrors the first, so a change to either keeps the ring closed in half the cases.
        const res = await postRaw(rawBody(`num-${++i}`, ring))
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        if (![201, 400, 422].includes(res.statusCode)) t.fail(`${ring.join(',')} → ${res.statusCode} ${res.body}`)
        if (res.statusCode === 201) {
          const read = await app.inject({ method: 'GET', url: `/sources/?id=${res.json().id as string}`, headers: editor.headers })
          if (read.statusCode !== 200) t.fail(`${ring.join(',')} stored but GET → ${read.statusCode} ${read.body}`)
        }
      }
    }
  }
  t.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0 && (statuses.get(422) ?? 0) > 0, `all three outcomes seen: ${JSON.stringify([...statuses])}`)
})

t.test('degenerate rings (all positions equal after rounding) are 422, not 500', async (t) => {
  for (const ring of [
    ['[0,0]', '[1e-400,0]', '[0,1e-400]', '[0,0]'],
    ['[5e-324,5e-324]', '[5e-324,5e-324]', '[5e-324,5e-324]', '[5e-324,5e-324]'],
    ['[9007199254740993,0]', '[9007199254740992,0]', '[0,0]', '[9007199254740993,0]']
  ]) {
    const res = await postRaw(rawBody(`degenerate-${ring[0] as string}`, ring))
    t.ok([400, 422].includes(res.statusCode), `${ring.join(',')} → ${res.statusCode} ${res.body}`)
  }
})

const ODD_DATES = [
  '"2024-02-30"', '"2023-02-29"', '"2024-02-29"', '"2024-01-01T24:00:00Z"', '"2024-01-01T23:59:60Z"', '"+002024-01-01"',
  '"0000-01-01"', '"9999-12-31T23:59:59.999999999Z"', '"2024-01-01T00:00:00-00:00"', '"2024-01-01T00:00:00+15:59"',
  '"2024-01-01T00:00:00+16:00"', '"2024-1-1"', '"２０２４-01-01"', '"2024-01-01T00:00:00\\u0000Z"', '"2024-01-01\\ud800"',
  '""', '" 2024-01-01"', '"2024-01-01T00:00Z"', '"2024-01-01T00Z"', '"1899-12-31T23:59:59Z"', '"2100-01-01"', '-0', '1e400',
  'null', '[]', '{}', 'true', '"NaN"', '"Infinity"'
]

t.test('odd dates for start_at and end_at: 201, 400 or 422, never a 500', async (t) => {
  let i = 0
  for (const odd of ODD_DATES) {
    for (const [start, end] of [[odd, '"2100-01-01T00:00:00Z"'], ['"1900-01-01"', odd]] as const) {
      const res = await postRaw(rawBody(`date-${++i}`, ['[30,30]', '[31,30]', '[31,31]', '[30,31]', '[30,30]'], start, end))
      if (![201, 400, 422].includes(res.statusCode)) t.fail(`${start} / ${end} → ${res.statusCode} ${res.body}`)
      else t.pass(`${start} / ${end} → ${res.statusCode}`)
    }
  }
})

t.test('odd ids on GET and DELETE: 400 or 404, never a 500', async (t) => {
  const ids = ['src_', 'src_%00', 'src_-0', 'src_1e400', 'src_NaN', `src_${'a'.repeat(5000)}`, 'src_%F0%9F%98%80aaaaaaaaaaaaaaa', '%E0%A4%A', 'src_aaaaaaaaaaaaaaaaaaaaaa&id=src_bbbbbbbbbbbbbbbbbbbbbb', '']
  for (const id of ids) {
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `/sources/?id=${id}`, headers: editor.headers })
      t.ok([400, 404].includes(res.statusCode), `${method} ${id.slice(0, 40)} → ${res.statusCode}`)
    }
  }
})

t.test('U+0000, which PostgreSQL text cannot hold, is a 400 naming the field, in a feature id and a login e-mail', async (t) => {
  const res = await postRaw(rawBody('nul \u0000 id', ['[40,40]', '[41,40]', '[41,41]', '[40,41]', '[40,40]']))
  t.equal(res.statusCode, 400, res.body)
  t.match(res.json(), { code: 'INVALID_GEOJSON', details: [{ pointer: '/features/0/id', message: /U\+0000/ }] })
  const login = await app.inject({ method: 'POST', url: '/token', payload: { email: 'a\u0000@example.org', password: 'x' } })
  t.equal(login.statusCode, 400, login.body)
  t.match(login.json(), { code: 'VALIDATION_FAILED', details: [{ pointer: '/email' }] })
})
