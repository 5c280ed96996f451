// Webhook delivery to a receiver on loopback (WEBHOOK_ALLOW_PRIVATE, as in development): every
// event of the subscribed types is POSTed as a CloudEvent, signed per Standard Webhooks (checked
// with the standardwebhooks package), in feed order; a receiver that answers 500 for a while gets
// every event after it recovers, in order, retried with backoff; the attempts are listed.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { build, collection, feature, session, square } from '../helper.js'

const ctx = await build(t, { WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_RETRY_BASE_MS: 50 })
const { app } = ctx
const editor = await session(ctx, 'editor', 'org-a')

interface Received { id: string, body: string, headers: Record<string, string>, status: number }

async function receiver (t: { teardown: (fn: () => unknown) => void }, answer: (n: number) => number) {
  const received: Received[] = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => { body += c })
    req.on('end', () => {
      const status = answer(received.length)
      received.push({ id: String(req.headers['webhook-id']), body, headers: req.headers as Record<string, string>, status })
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received }
}

async function until (what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function create (id: string, x: number): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature(id, { coordinates: square(x, 20) })) })
  if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode} ${res.body}`)
  return res.json().id
}

t.test('a receiver answering 500 for a while, then 200: every event delivered, in order, signed', async (t) => {
  const hook = await receiver(t, (n) => n < 4 ? 500 : 200)
  const res = await app.inject({ method: 'POST', url: '/subscriptions', headers: editor.headers, payload: { url: hook.url, types: ['source.created', 'source.deleted'] } })
  t.equal(res.statusCode, 201, res.body)
  const { id: subscription, secret } = res.json()
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push(await create(`hook-${i}`, i * 3))
  const gone = ids[0] as string
  t.equal((await app.inject({ method: 'DELETE', url: `/sources/?id=${gone}`, headers: editor.headers })).statusCode, 200)

  const ok = () => hook.received.filter((r) => r.status === 200)
  await until('six deliveries', () => ok().length >= 6)
  const delivered = ok().map((r) => JSON.parse(r.body) as { type: string, subject: string, id: string })
  t.same(delivered.map((e) => [e.type, e.subject]), [...ids.map((id) => ['source.created', id]), ['source.deleted', gone]], 'every event, in order, none of another type')
  const failed = hook.received.filter((r) => r.status === 500)
  t.equal(failed.length, 4)
  t.ok(failed.every((r) => r.id === failed[0]?.id), 'the failing event is retried before anything after it')
  t.equal(failed[0]?.id, delivered[0]?.id, 'and delivered once the receiver recovers')

  const wh = new Webhook(secret)
  for (const r of hook.received) {
    t.doesNotThrow(() => wh.verify(r.body, { 'webhook-id': r.headers['webhook-id'] as string, 'webhook-timestamp': r.headers['webhook-timestamp'] as string, 'webhook-signature': r.headers['webhook-signature'] as string }), 'signature verifies')
    t.equal(r.headers['content-type'], 'application/json')
  }
  t.throws(() => wh.verify(`${hook.received[0]?.body} `, { 'webhook-id': hook.received[0]?.headers['webhook-id'] as string, 'webhook-timestamp': hook.received[0]?.headers['webhook-timestamp'] as string, 'webhook-signature': hook.received[0]?.headers['webhook-signature'] as string }), 'a changed body does not')

  type Attempt = { status_code?: number, error?: string, latency_ms: number }
  let attempts: Attempt[] = []
  // Attempts are recorded when their batch ends, a moment after the receiver saw them.
  const list = async () => { attempts = (await app.inject({ method: 'GET', url: `/subscriptions/deliveries?id=${subscription}`, headers: editor.headers })).json().deliveries }
  for (let i = 0; i < 100 && attempts.filter((a) => a.status_code === 200).length < 6; i++) { await list(); await new Promise((r) => setTimeout(r, 100)) }
  t.ok(attempts.filter((a) => a.status_code === 500).length === 4, 'the four 500s are listed')
  t.ok(attempts.filter((a) => a.status_code === 200).length >= 6)
  t.match(attempts.find((a) => a.status_code === 500), { error: 'HTTP 500', latency_ms: Number })
  const subs = (await app.inject({ method: 'GET', url: '/subscriptions', headers: editor.headers })).json().subscriptions
  t.match(subs[0], { status: 'active', failures: 0 })
  await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${subscription}`, headers: editor.headers })
})

t.test('a receiver that does not answer in time is retried; the attempt names the timeout', async (t) => {
  let hang = true
  const received: string[] = []
  const server = http.createServer((req, res) => {
    received.push(String(req.headers['webhook-id']))
    req.resume()
    if (hang) { hang = false; return }
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => { server.closeAllConnections(); return new Promise((r) => server.close(r)) })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const res = await app.inject({ method: 'POST', url: '/subscriptions', headers: editor.headers, payload: { url, types: ['source.created'] } })
  const { id } = res.json()
  await create('slow-1', 40)
  await until('a second attempt', () => received.length >= 2, 30_000)
  t.equal(received[0], received[1], 'the same event again')
  const attempts = (await app.inject({ method: 'GET', url: `/subscriptions/deliveries?id=${id}`, headers: editor.headers })).json().deliveries as Array<{ status_code?: number, error?: string }>
  t.ok(attempts.some((a) => a.status_code === undefined && /no answer within/.test(a.error ?? '')), JSON.stringify(attempts))
  await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${id}`, headers: editor.headers })
})
