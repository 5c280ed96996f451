// Vector tiles against a running service: tiles/s at 16 connections (autocannon) on the tiles of
// a dense region at z14, z10 and z6, each run on fresh ETags (no If-None-Match) and on 304s; tile
// sizes p50/max per zoom; cold against 304 latency. Not a full setup like bench/features.mjs: it
// needs BENCH_URL (the service), BENCH_TOKEN (a bearer token) and the region's centre
// BENCH_LON/BENCH_LAT (default 11, 50.6). Prints Markdown. Usage: node bench/tiles.mjs
import autocannon from 'autocannon'

const BASE = process.env.BENCH_URL ?? 'http://127.0.0.1:3000'
const TOKEN = process.env.BENCH_TOKEN
const LON = Number(process.env.BENCH_LON ?? 11)
const LAT = Number(process.env.BENCH_LAT ?? 50.6)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
if (TOKEN === undefined) { process.stderr.write('BENCH_TOKEN is required\n'); process.exit(1) }
const auth = { authorization: `Bearer ${TOKEN}` }

function tileOf (lon, lat, z) {
  const n = 2 ** z
  const r = (lat * Math.PI) / 180
  return [z, Math.floor(((lon + 180) / 360) * n), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)]
}
/** The 3 × 3 tiles around the centre. */
const around = (z) => {
  const [, x, y] = tileOf(LON, LAT, z)
  const out = []
  for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) out.push(`/collections/sources/tiles/WebMercatorQuad/${z}/${y + dy}/${x + dx}`)
  return out
}
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]

console.log('| zoom | tiles/s (200) | tiles/s (304) | p50 bytes | max bytes | cold ms p50 | 304 ms p50 |')
console.log('|---|---|---|---|---|---|---|')
for (const z of [14, 10, 6]) {
  const paths = around(z)
  const sizes = []
  const etags = new Map()
  const cold = []
  const warm = []
  for (const p of paths) {
    let t0 = performance.now()
    const res = await fetch(BASE + p, { headers: auth })
    const body = Buffer.from(await res.arrayBuffer())
    cold.push(performance.now() - t0)
    sizes.push(body.length)
    etags.set(p, res.headers.get('etag'))
    t0 = performance.now()
    const again = await fetch(BASE + p, { headers: { ...auth, 'if-none-match': res.headers.get('etag') } })
    await again.arrayBuffer()
    warm.push(performance.now() - t0)
  }
  const run = (withEtag) => autocannon({
    url: BASE,
    connections: 16,
    duration: DURATION,
    requests: paths.map((path) => ({ method: 'GET', path, headers: withEtag ? { ...auth, 'if-none-match': etags.get(path) } : auth }))
  })
  const full = await run(false)
  const notModified = await run(true)
  console.log(`| ${z} | ${full.requests.average} | ${notModified.requests.average} | ${pct(sizes, 0.5)} | ${Math.max(...sizes)} | ${pct(cold, 0.5).toFixed(1)} | ${pct(warm, 0.5).toFixed(1)} |`)
}
