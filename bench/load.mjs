// Load generator, run as its own process so it does not share an event loop with the service:
// one autocannon run (-p 1, fixed connections and duration) of one scenario; prints JSON.
// Usage: node bench/load.mjs '<scenario json>'
import autocannon from 'autocannon'

const s = JSON.parse(process.argv[2])
const auth = s.token ? { authorization: `Bearer ${s.token}` } : {}
let counter = 0
const seededId = (n) => `src_${String(n).padStart(22, '0')}`
const randomGet = () => seededId(1 + Math.floor(Math.random() * s.getRows))
let nextDelete = s.deleteFrom ?? 0
const unique = () => `${s.runTag}-${process.pid}-${counter++}`

function ring (vertices, cx, cy) {
  const r = []
  for (let i = 0; i < vertices - 1; i++) {
    const a = (2 * Math.PI * i) / (vertices - 1)
    r.push([+(cx + 0.001 * Math.cos(a)).toFixed(7), +(cy + 0.001 * Math.sin(a)).toFixed(7)])
  }
  r.push(r[0])
  return [r]
}
const feature = (id, vertices, i = 0) => ({ type: 'Feature', id, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: ring(vertices, (i % 300) * 0.01, Math.floor(i / 300) * 0.01) } })
// A collection body with @@ where the per-request unique part of each feature id goes.
const template = (n, vertices) => JSON.stringify({ type: 'FeatureCollection', features: Array.from({ length: n }, (_, i) => feature(`@@-${i}`, vertices, i)) })
const postTemplate = template(s.features ?? 1, s.vertices ?? 5)

const requests = {
  token: () => ({ method: 'POST', path: '/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: s.email, password: s.password }) }),
  get: () => ({ method: 'GET', path: `/sources/?id=${randomGet()}`, headers: auth }),
  post: () => ({ method: 'POST', path: '/sources', headers: { ...auth, 'content-type': 'application/json' }, body: postTemplate.replaceAll('@@', unique()) }),
  delete: () => ({ method: 'DELETE', path: `/sources/?id=${seededId(nextDelete++)}`, headers: auth })
}
const mixed = () => {
  const x = Math.random()
  return x < 0.80 ? requests.get() : x < 0.95 ? requests.post() : requests.delete()
}
const make = s.kind === 'mixed' ? mixed : requests[s.kind]

const result = await autocannon({
  url: s.url,
  connections: s.connections,
  pipelining: 1,
  ...(s.amount ? { amount: s.amount } : { duration: s.duration }),
  ...(s.rate ? { overallRate: s.rate } : {}),
  requests: [{ setupRequest: (req) => ({ ...req, ...make() }) }]
})
process.stdout.write(JSON.stringify({
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  total: result.requests.total,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  statusCodes: result.statusCodeStats
}))
