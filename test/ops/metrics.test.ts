// GET /metrics: off unless configured; behind METRICS_TOKEN on the service's port, or open on
// METRICS_PORT; after known traffic its counters and histograms move by exactly that traffic,
// labelled by route pattern (no id in any label); refusals of the rate limit and the login
// throttle, statement timeouts, conflict pairs, the pools (server backend) and Node's defaults.
import t from 'tap'
import { Kysely, PostgresDialect } from 'kysely'
import { buildApp } from '../../src/app.js'
import type { Database } from '../../src/db/database.js'
import { backend, build, collection, createDatabase, expectError, freePort, feature, session, square, startService, testConfig } from '../helper.js'

const TOKEN = 'metrics-token-0123456789'
const auth = { authorization: `Bearer ${TOKEN}` }

interface Sample { name: string, labels: Record<string, string>, value: number }

/** The Prometheus text format's samples (no escapes in our label values). */
function parse (text: string): Sample[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((line) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`not a sample: ${line}`)
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="([^"]*)"/g)].map((l) => [l[1] as string, l[2] as string]))
    return { name: m[1] as string, labels, value: Number(m[3]) }
  })
}

/** The sum of the samples of `name` whose labels include `labels`. */
function value (samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0)
}

t.test('off by default: no /metrics, and nothing timed', async (t) => {
  const { app } = await build(t)
  for (const method of ['GET', 'POST'] as const) {
    const off = expectError(t, await app.inject({ method, url: '/metrics', headers: auth }), 404, 'NOT_FOUND')
    t.match(off.message, /^Metrics are off: an operator turns them on with METRICS_TOKEN .* or METRICS_PORT .*docs\/operations\.md#metrics/, `${method}: says how to turn them on`)
  }
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
  t.notOk('/metrics' in doc.paths, 'not an operation of the document')
  await app.inject({ method: 'GET', url: '/health' })
  t.equal(value(parse(await app.metrics.registry.metrics()), 'source_registry_http_requests_total'), 0, 'no hook counts requests')
})

t.test('METRICS_TOKEN: the token, and nothing else, opens /metrics; documented with its own security scheme', async (t) => {
  const { app } = await build(t, { METRICS_TOKEN: TOKEN })
  for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: `Basic ${TOKEN}` }]) {
    const res = await app.inject({ method: 'GET', url: '/metrics', headers })
    expectError(t, res, 401, 'UNAUTHORIZED')
    t.match(res.headers['www-authenticate'], /^Bearer/)
  }
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: auth })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get?: { security?: unknown } }> }
  t.same(doc.paths['/metrics']?.get?.security, [{ metricsToken: [] }])
})

t.test('after known traffic: counters and histograms move by it, labelled by pattern', async (t) => {
  const test = await build(t, { METRICS_TOKEN: TOKEN, CONFLICT_TOLERANCE_M: 9 })
  const { app } = test
  const editor = await session(test)
  const scrape = async () => parse((await app.inject({ method: 'GET', url: '/metrics', headers: auth })).body)
  const before = await scrape()

  const ids = ['src_0000000000000000000000001', 'src_0000000000000000000000002', 'src_0000000000000000000000003']
  for (const id of ids) t.equal((await app.inject({ method: 'GET', url: `/collections/sources/items/${id}`, headers: editor.headers })).statusCode, 404)
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/nothing-here-42abc' })).statusCode, 404)
  t.equal((await app.inject({ method: 'PUT', url: '/sources/versions' })).statusCode, 405)
  t.equal((await app.inject({ method: 'PATCH', url: `/collections/sources/items/${ids[0] as string}`, headers: { 'if-match': 'W/"1"' } })).statusCode, 401)
  // Two sources that overlap for the same time: one conflict pair, from the second write.
  const first = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('a', { coordinates: square(10, 50) })) })
  const second = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('b', { coordinates: square(10.5, 50) })) })
  t.same([first.statusCode, second.statusCode], [201, 201])
  t.equal((second.json() as { sources: Array<{ conflicts: string[] }> }).sources[0]?.conflicts.length, 1)
  // Two overlapping features in one request: one pair, listed by both.
  const both = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('c', { coordinates: square(40, 10) }), feature('d', { coordinates: square(40.5, 10) })) })
  t.equal(both.statusCode, 201)
  const createdId = (first.json() as { id: string }).id
  t.equal((await app.inject({ method: 'GET', url: `/sources/?id=${createdId}`, headers: editor.headers })).statusCode, 200)

  const after = await scrape()
  const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels)
  const item = { route: '/collections/sources/items/:id', method: 'GET', status: '404' }
  t.equal(moved('source_registry_http_requests_total', item), 3, 'three item 404s under the route pattern')
  t.equal(moved('source_registry_http_request_duration_seconds_count', item), 3)
  t.ok(moved('source_registry_http_request_duration_seconds_sum', item) > 0)
  t.equal(moved('source_registry_http_request_duration_seconds_bucket', { ...item, le: '+Inf' }), 3)
  const buckets = after.filter((s) => s.name === 'source_registry_http_request_duration_seconds_bucket' && s.labels.route === item.route && s.labels.status === '404')
  t.ok(buckets.every((b, i) => i === 0 || b.value >= (buckets[i - 1] as Sample).value), 'buckets are cumulative')
  t.equal(moved('source_registry_http_requests_total', { route: '/health', method: 'GET', status: '200' }), 5)
  t.equal(moved('source_registry_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }), 1)
  t.equal(moved('source_registry_http_requests_total', { route: 'unmatched', method: 'PUT', status: '405' }), 1)
  t.equal(moved('source_registry_http_requests_total', { route: '/collections/sources/items/:id', method: 'PATCH', status: '401' }), 1, 'a change of one item under the route pattern, no id')
  t.equal(moved('source_registry_http_requests_total', { route: '/sources', method: 'POST', status: '201' }), 3)
  t.equal(moved('source_registry_http_requests_total', { route: '/sources', method: 'GET', status: '200' }), 1, 'GET /sources/?id= under /sources')
  t.equal(moved('source_registry_http_requests_total', { route: '/token', method: 'POST', status: '200' }), 0, 'the login was before the first scrape')
  t.equal(moved('source_registry_http_requests_total', { route: '/metrics', method: 'GET', status: '200' }), 1, 'the first scrape, seen by the second')
  t.equal(moved('source_registry_conflict_pairs_total'), 2)

  const labelValues = after.flatMap((s) => Object.values(s.labels))
  const leaks = labelValues.filter((v) => /src_|[0-9a-f]{8}-[0-9a-f]{4}|42abc|\?/.test(v) || v.includes(createdId))
  t.same(leaks, [], 'no id, query or raw path in any label')
  t.ok(value(after, 'process_cpu_user_seconds_total') > 0, 'default process metrics')
  t.ok(value(after, 'nodejs_heap_size_total_bytes') > 0)
  if (backend === 'server') {
    t.ok(value(after, 'source_registry_db_pool_size', { pool: 'primary' }) >= 1, 'the pool is reported')
    t.ok(after.some((s) => s.name === 'source_registry_db_pool_waiting' && s.labels.pool === 'primary'))
    t.ok(after.some((s) => s.name === 'source_registry_db_pool_in_use' && s.labels.pool === 'primary'))
  }
})

t.test('refusals: the rate limit and the login throttle, each counted once per 429', async (t) => {
  const test = await build(t, { METRICS_TOKEN: TOKEN, RATE_LIMIT_MAX: 3, LOGIN_MAX_FAILURES: 2 })
  const { app } = test
  const scrape = async () => parse((await app.inject({ method: 'GET', url: '/metrics', headers: auth })).body)
  const login = () => app.inject({ method: 'POST', url: '/token', payload: { email: 'nobody@example.org', password: 'wrong password' } })
  t.same([(await login()).statusCode, (await login()).statusCode, (await login()).statusCode], [401, 401, 429], 'the third login: the pair is throttled')
  t.same([(await login()).statusCode, (await login()).statusCode], [429, 429], 'then the rate limit (3 per window) refuses')
  const after = await scrape()
  t.equal(value(after, 'source_registry_login_throttle_rejections_total', { limit: 'pair' }), 1)
  t.equal(value(after, 'source_registry_rate_limit_rejections_total'), 2)
  t.equal(value(after, 'source_registry_http_requests_total', { route: '/token', status: '429' }), 3)
})

t.test('statement timeouts: counted when a statement ran past its time', async (t) => {
  const client = {
    query: async () => { throw Object.assign(new Error('canceling statement due to statement timeout'), { severity: 'ERROR', code: '57014' }) },
    release: () => {}
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect: async () => client, end: async () => {} } as never }) })
  const app = await buildApp({ config: testConfig({ METRICS_TOKEN: TOKEN }), db })
  t.teardown(() => app.close())
  for (let i = 0; i < 2; i++) expectError(t, await app.inject({ method: 'POST', url: '/token', payload: { email: 'a@b.c', password: 'whatever' } }), 503, 'SERVICE_UNAVAILABLE')
  const after = parse((await app.inject({ method: 'GET', url: '/metrics', headers: auth })).body)
  t.equal(value(after, 'source_registry_db_statement_timeouts_total'), 2)
  t.equal(value(after, 'source_registry_http_requests_total', { route: '/token', method: 'POST', status: '503' }), 2)
})

t.test('METRICS_PORT: /metrics on a port of its own without a token, not on the service\'s', async (t) => {
  const port = await freePort()
  const service = await startService(t, await createDatabase(t), { METRICS_PORT: String(port) })
  await fetch(`${service.base}/health`)
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  t.equal(res.status, 200)
  const samples = parse(await res.text())
  t.equal(value(samples, 'source_registry_http_requests_total', { route: '/health', method: 'GET', status: '200' }), 1)
  t.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404)
  const here = await fetch(`${service.base}/metrics`)
  t.equal(here.status, 404, 'not on the service\'s port')
  t.match(((await here.json()) as { message: string }).message, `Metrics are served on their own port (METRICS_PORT=${port}), not here`)
})
