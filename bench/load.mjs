// Load generator, run as its own process so it does not share an event loop with the service:
// one run of one scenario, printed as JSON. Closed loop with autocannon (-p 1, fixed connections,
// duration or amount, optionally its bursty per-second rate limit), or, with `paced`, an
// open-loop load at an even rate (for latency at a given load).
// With `client: 'fetch'`, a closed loop of fetch() workers instead of autocannon: what a Node
// client written the obvious way costs (its own CPU on the cores it shares with the service).
// With `client: 'wrk'` (kind `paths` only), the same closed loop run by wrk (Debian's `wrk`, C
// and LuaJIT): a generator that takes ~0.03 ms of CPU per request where autocannon takes ~0.3,
// on the same two cores as the service and PostgreSQL, as pgbench's C client does.
// Usage: node bench/load.mjs '<scenario json>'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { placedPolygon, placement } from './bodies.mjs'

const s = JSON.parse(process.argv[2])
// `authorization`: the header as given (an API key as Bearer or Basic: bench/keys.mjs); else the token.
const auth = s.authorization !== undefined ? { authorization: s.authorization } : s.token ? { authorization: `Bearer ${s.token}` } : {}
let counter = 0
// Ids: either seeded by SQL as src_ + the row number (server backend), or listed in a file
// (embedded backend, seeded through the API): GET picks among the first getRows, DELETE walks on
// from deleteFrom.
const ids = s.idsFile ? JSON.parse(readFileSync(s.idsFile, 'utf8')) : undefined
const seededId = (n) => ids ? ids[n] : `src_${String(n).padStart(22, '0')}`
const randomGet = () => seededId((ids ? 0 : 1) + Math.floor(Math.random() * s.getRows))
let nextDelete = s.deleteFrom ?? 0
const unique = () => `${s.runTag}-${process.pid}-${counter++}`

// `attributes`: each feature carries ten attributes as a GIS layer's parcels do (bench/attributes.mjs).
const attributesOf = (id) => s.attributes ? {
  parcel_no: `NL-${id}`, name: `Parcel ${id}`, land_use: ['forest', 'pasture', 'arable', 'wetland'][counter % 4], hectares: (counter % 10000) / 10,
  owner: 'Gemeente Utrecht', project: 'Carbon 2024', planted: '2024-03-15', organic: counter % 2 === 0, surveyed_at: '2024-02-01T09:30:00Z', tags: ['peat', 'restored']
} : {}
const feature = (id, vertices, i, place) => ({ type: 'Feature', id, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z', ...attributesOf(id) }, geometry: { type: 'Polygon', coordinates: placedPolygon(vertices, i, place) } })
// A collection body: the features' ids unique, their polygons in a block of their own at random
// (bodies.mjs placement: a place no earlier request is likely to have taken, so conflict
// detection finds nothing there).
const postBody = (id) => {
  const n = s.features ?? 1
  const place = placement(n)
  return JSON.stringify({ type: 'FeatureCollection', features: Array.from({ length: n }, (_, i) => feature(`${id}-${i}`, s.vertices ?? 5, i, place)) })
}
// `region` [west, south, east, north, size]: each request's features are boxes of `size`° at
// random places in the region instead (bench/conflicts.mjs: new sources in a dense region).
const regionBody = (id) => {
  const [w, so, e, n, size] = s.region
  return JSON.stringify({
    type: 'FeatureCollection',
    features: Array.from({ length: s.features ?? 1 }, (_, i) => {
      const x = +(w + Math.random() * (e - w - size)).toFixed(6)
      const y = +(so + Math.random() * (n - so - size)).toFixed(6)
      return { type: 'Feature', id: `${id}-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + size, y], [x + size, y + size], [x, y + size], [x, y]]] } }
    })
  })
}

const requests = {
  token: () => ({ method: 'POST', path: '/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: s.email, password: s.password }) }),
  get: () => ({ method: 'GET', path: `/sources/?id=${randomGet()}`, headers: auth }),
  post: () => ({ method: 'POST', path: `/sources${s.query ?? ''}`, headers: { ...auth, 'content-type': 'application/json' }, body: s.region ? regionBody(unique()) : postBody(unique()) }),
  delete: () => ({ method: 'DELETE', path: `/sources/?id=${seededId(nextDelete++)}`, headers: auth })
}
const mixed = () => {
  const x = Math.random()
  return x < 0.80 ? requests.get() : x < 0.95 ? requests.post() : requests.delete()
}
// `paths`: GET one of the given paths at random (with the token, when there is one).
requests.paths = () => ({ method: 'GET', path: s.paths[Math.floor(Math.random() * s.paths.length)], headers: auth })
const make = s.kind === 'mixed' ? mixed : requests[s.kind]

// The generator's own CPU over the run (ms of user + system time; wrk's, or this process's from
// here on, not its start): on 2 shared cores, what it takes is not the service's.
const cpu0 = process.cpuUsage()
const output = s.paced ? await paced() : s.client === 'fetch' ? await fetchLoop() : s.client === 'wrk' ? wrkLoop() : await closedLoop()
const cpu = process.cpuUsage(cpu0)
process.stdout.write(JSON.stringify({ ...output, generatorCpuMs: output.wrkCpuMs ?? Math.round((cpu.user + cpu.system) / 1000), deletes: nextDelete - (s.deleteFrom ?? 0) }))

/** autocannon: each of the connections sends its next request as soon as the last is answered. */
async function closedLoop () {
  const started = performance.now()
  let lastAnswer = started
  const instance = autocannon({
    url: s.url,
    connections: s.connections,
    pipelining: 1,
    ...(s.amount ? { amount: s.amount } : { duration: s.duration }),
    // A fixed amount is a run of large requests timed to the last answer: wait for each (60 s)
    // instead of autocannon's 10 s, after which it counted an error and sent the next while the
    // service still worked on the one it gave up (the embedded backend, one query at a time,
    // answers 16 queued 1,000-feature POSTs in ~10 s).
    timeout: s.amount ? 60 : 10,
    // autocannon's rate limit lets each connection send its quota for the second as fast as it
    // can, then pause until the next second: bursts at full speed, not an even load.
    ...(s.rate ? { overallRate: s.rate } : {}),
    requests: [{ setupRequest: (req) => ({ ...req, ...make() }) }]
  })
  instance.on('response', () => { lastAnswer = performance.now() })
  const result = await instance
  // A run of a fixed amount ends on autocannon's 1 s tick, and its per-second average is then
  // the count, not a rate: divide by the time from start to the last answer instead.
  const seconds = (lastAnswer - started) / 1000
  return {
    rps: s.amount ? result.requests.total / seconds : result.requests.average,
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
 *
 * HTTP/1.1 is written and read on plain sockets (requests serialised once, responses framed by
 * Content-Length): node:http's client costs this process enough CPU, on cores it shares with
 * the service, to put its own p99 above 10 ms at a few thousand requests/s against a server
 * that does nothing (see `floor` in bench/run.mjs).
 */
async function paced () {
  const url = new URL(s.url)
  const latencies = []
  const lateness = []
  const waits = []
  const statusCodes = {}
  const queue = []
  const idle = []
  let errors = 0; let sent = 0; let answered = 0; let finished = false
  let done
  const allDone = new Promise((resolve) => { done = resolve })
  const settle = () => { if (finished && answered + errors === sent) done() }
  const serialise = (r) => {
    const body = r.body === undefined ? undefined : Buffer.from(r.body)
    const head = [`${r.method} ${r.path} HTTP/1.1`, `host: ${url.host}`, ...Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}`), ...(body ? [`content-length: ${body.length}`] : []), '', ''].join('\r\n')
    return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head)
  }
  const connect = () => new Promise((resolve, reject) => {
    const c = { socket: net.connect({ host: url.hostname, port: Number(url.port) }), buf: Buffer.alloc(0), due: 0 }
    c.socket.setNoDelay(true)
    c.socket.once('connect', () => resolve(c))
    c.socket.once('error', reject)
    c.socket.on('data', (chunk) => {
      c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk])
      const end = c.buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = c.buf.toString('latin1', 0, end)
      const length = /\r\ncontent-length: *(\d+)/i.exec(head)
      if (length === null) throw new Error(`response without content-length: ${head}`)
      if (c.buf.length < end + 4 + Number(length[1])) return
      if (c.buf.length > end + 4 + Number(length[1])) throw new Error('unexpected bytes after a response')
      const status = head.slice(9, 12)
      latencies.push(performance.now() - c.due)
      statusCodes[status] = (statusCodes[status] ?? 0) + 1
      answered++
      c.buf = Buffer.alloc(0)
      send(c)
      settle()
    })
  })
  // Connections are opened before the clock starts, as autocannon does.
  const conns = await Promise.all(Array.from({ length: s.connections }, connect))
  // A socket the server closes counts its unanswered request as an error and leaves the pool;
  // with none left, every request still waiting or yet to come due is an error too.
  let open = conns.length
  for (const c of conns) {
    c.socket.on('error', () => {})
    c.socket.on('close', () => {
      open--
      const i = idle.indexOf(c)
      if (i >= 0) idle.splice(i, 1)
      if (c.due) { errors++; c.due = 0 }
      if (open === 0) { errors += queue.length; queue.length = 0 }
      settle()
    })
  }
  const send = (c) => {
    const next = queue.shift()
    if (next === undefined) { c.due = 0; idle.push(c); return }
    c.due = next.due
    waits.push(performance.now() - next.due)
    c.socket.write(next.bytes)
  }
  idle.push(...conns)
  const start = performance.now()
  const end = start + s.duration * 1000
  const timer = setInterval(() => {
    const now = performance.now()
    for (let due = start + (sent * 1000) / s.rate; due <= now && due < end; due = start + (sent * 1000) / s.rate) {
      sent++
      lateness.push(now - due)
      if (open === 0) { errors++; continue }
      queue.push({ due, bytes: serialise(make()) })
      const c = idle.pop()
      if (c !== undefined) send(c)
    }
    if (now >= end) { clearInterval(timer); finished = true; settle() }
  }, 1)
  await allDone
  for (const c of conns) { c.socket.removeAllListeners('close'); c.socket.destroy() }
  latencies.sort((a, b) => a - b)
  lateness.sort((a, b) => a - b)
  waits.sort((a, b) => a - b)
  const quantile = (xs, q) => xs.length === 0 ? 0 : +xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)].toFixed(1)
  const at = (q) => quantile(latencies, q)
  const non2xx = Object.entries(statusCodes).reduce((n, [code, count]) => n + (Number(code) >= 300 ? count : 0), 0)
  return { rps: latencies.length / s.duration, p50: at(0.5), p99: at(0.99), lateP50: quantile(lateness, 0.5), lateP99: quantile(lateness, 0.99), waitP99: quantile(waits, 0.99), total: latencies.length, non2xx, errors, timeouts: 0, statusCodes }
}

/** `connections` fetch() workers, each sending its next request when the last is answered. */
async function fetchLoop () {
  const latencies = []
  const statusCodes = {}
  let errors = 0
  const end = performance.now() + s.duration * 1000
  const worker = async () => {
    while (performance.now() < end) {
      const r = make()
      const t0 = performance.now()
      try {
        const res = await fetch(`${s.url}${r.path}`, { method: r.method, headers: r.headers, body: r.body })
        await res.arrayBuffer()
        statusCodes[res.status] = (statusCodes[res.status] ?? 0) + 1
        latencies.push(performance.now() - t0)
      } catch {
        errors++
      }
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: s.connections }, worker))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies.length === 0 ? 0 : +latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)].toFixed(1)
  const non2xx = Object.entries(statusCodes).reduce((n, [code, count]) => n + (Number(code) >= 300 ? count : 0), 0)
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), total: latencies.length, non2xx, errors, timeouts: 0, statusCodes }
}

/**
 * wrk, one thread, `connections` keep-alive connections, each sending its next GET of one of
 * `paths` (at random) when the last is answered. wrk counts answers that are not 2xx/3xx as
 * status errors; they are reported as non2xx. Its CPU comes from the shell's `times`. Optional:
 * `headers`, more request headers (bench/tiles.mjs: If-None-Match); `timeout` in s (default 10),
 * after which wrk drops a request and counts a timeout.
 */
function wrkLoop () {
  if (s.kind !== 'paths') throw new Error('client wrk runs kind "paths" only')
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
  const script = join(dir, 'paths.lua')
  const lua = (v) => JSON.stringify(v) // a JSON string of ASCII is a Lua string literal
  writeFileSync(script, `local paths = {${s.paths.map(lua).join(',')}}
local headers = {${Object.entries({ ...auth, ...s.headers }).map(([k, v]) => `[${lua(k)}] = ${lua(v)}`).join(',')}}
math.randomseed(${Math.floor(Math.random() * 1e9)})
request = function () return wrk.format('GET', paths[math.random(#paths)], headers) end
done = function (summary, latency, requests)
  io.write(string.format('{"requests":%d,"duration":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d}\\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`)
  const args = ['-t', '1', '-c', String(s.connections), '-d', `${s.duration}s`, '--timeout', `${s.timeout ?? 10}s`, '-s', script, s.url]
  const r = spawnSync('sh', ['-c', 'wrk "$@" && times', 'sh', ...args], { encoding: 'utf8' })
  rmSync(dir, { recursive: true, force: true })
  if (r.status !== 0) throw new Error(`wrk: ${r.stderr}${r.stdout}`)
  const line = r.stdout.split('\n').find((l) => l.startsWith('{"requests"'))
  if (line === undefined) throw new Error(`wrk printed no summary: ${r.stdout}`)
  const w = JSON.parse(line)
  // `times`: the shell's user and system time, then its children's ("0m1.23s 0m0.45s").
  const children = r.stdout.trim().split('\n').at(-1).match(/(\d+)m([\d.]+)s/g).map((t) => { const [, m, sec] = /(\d+)m([\d.]+)s/.exec(t); return Number(m) * 60 + Number(sec) })
  const errors = w.connect + w.read + w.write
  return { rps: w.requests / (w.duration / 1e6), p50: +(w.p50 / 1000).toFixed(1), p99: +(w.p99 / 1000).toFixed(1), total: w.requests, non2xx: w.status, errors, timeouts: w.timeout, statusCodes: { '2xx/3xx': w.requests - w.status, ...(w.status > 0 ? { '4xx/5xx': w.status } : {}) }, wrkCpuMs: Math.round((children[0] + children[1]) * 1000) }
}
