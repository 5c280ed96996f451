// Load generator, run as its own process so it does not share an event loop with the service:
// one run of one scenario, printed as JSON. Closed loop with autocannon (-p 1, fixed connections,
// duration or amount, optionally its bursty per-second rate limit), or, with `paced`, an
// open-loop load at an even rate (for latency at a given load).
// Usage: node bench/load.mjs '<scenario json>'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import autocannon from 'autocannon'
import { polygon } from './bodies.mjs'

const s = JSON.parse(process.argv[2])
const auth = s.token ? { authorization: `Bearer ${s.token}` } : {}
let counter = 0
// Ids: either seeded by SQL as src_ + the row number (server backend), or listed in a file
// (embedded backend, seeded through the API): GET picks among the first getRows, DELETE walks on
// from deleteFrom.
const ids = s.idsFile ? JSON.parse(readFileSync(s.idsFile, 'utf8')) : undefined
const seededId = (n) => ids ? ids[n] : `src_${String(n).padStart(22, '0')}`
const randomGet = () => seededId((ids ? 0 : 1) + Math.floor(Math.random() * s.getRows))
let nextDelete = s.deleteFrom ?? 0
const unique = () => `${s.runTag}-${process.pid}-${counter++}`

const feature = (id, vertices, i = 0) => ({ type: 'Feature', id, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: polygon(vertices, i) } })
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

const output = s.paced ? await paced() : await closedLoop()
process.stdout.write(JSON.stringify({ ...output, deletes: nextDelete - (s.deleteFrom ?? 0) }))

/** autocannon: each of the connections sends its next request as soon as the last is answered. */
async function closedLoop () {
  const result = await autocannon({
    url: s.url,
    connections: s.connections,
    pipelining: 1,
    ...(s.amount ? { amount: s.amount } : { duration: s.duration }),
    // autocannon's rate limit lets each connection send its quota for the second as fast as it
    // can, then pause until the next second: bursts at full speed, not an even load.
    ...(s.rate ? { overallRate: s.rate } : {}),
    requests: [{ setupRequest: (req) => ({ ...req, ...make() }) }]
  })
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: result.statusCodeStats
  }
}

/**
 * An open-loop load at an even `rate`: request k is due at start + k / rate, whatever happened
 * to the ones before, over at most `connections` keep-alive sockets (a request finding them all
 * busy waits for one). Latency is measured from when the request was due, so waiting for a
 * socket counts, and the 1 ms timer tick can only add to it.
 */
async function paced () {
  const url = new URL(s.url)
  const agent = new http.Agent({ keepAlive: true, maxSockets: s.connections })
  const latencies = []
  const statusCodes = {}
  let errors = 0; let sent = 0; let inflight = 0; let finished = false
  const start = performance.now()
  const end = start + s.duration * 1000
  await new Promise((resolve) => {
    const settle = () => { if (--inflight === 0 && finished) resolve() }
    const timer = setInterval(() => {
      const now = performance.now()
      for (let due = start + (sent * 1000) / s.rate; due <= now && due < end; due = start + (sent * 1000) / s.rate) {
        sent++
        inflight++
        const r = make()
        const headers = { ...r.headers, ...(r.body !== undefined ? { 'content-length': Buffer.byteLength(r.body) } : {}) }
        const req = http.request({ host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent }, (res) => {
          res.resume()
          res.on('end', () => {
            latencies.push(performance.now() - due)
            statusCodes[res.statusCode] = (statusCodes[res.statusCode] ?? 0) + 1
            settle()
          })
        })
        req.on('error', () => { errors++; settle() })
        req.end(r.body)
      }
      if (now >= end) {
        clearInterval(timer)
        finished = true
        if (inflight === 0) resolve()
      }
    }, 1)
  })
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies.length === 0 ? 0 : +latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)].toFixed(1)
  const non2xx = Object.entries(statusCodes).reduce((n, [code, count]) => n + (Number(code) >= 300 ? count : 0), 0)
  return { rps: latencies.length / s.duration, p50: at(0.5), p99: at(0.99), total: latencies.length, non2xx, errors, timeouts: 0, statusCodes }
}
