// GET /events/stream: Server-Sent Events over a real socket. An event written after connecting
// arrives; the heartbeat comment comes at least every EVENTS_HEARTBEAT_MS; a client that
// reconnects with Last-Event-ID gets exactly what it missed; a bad Last-Event-ID is a 400.
import t from 'tap'
import { EVENT_TYPES } from '../../src/events/events.schema.js'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { build, collection, expectError, feature, session, square } from '../helper.js'

/** How often the hub looks for new events here (no LISTEN): an event comes at the next look. */
const POLL_MS = 100
/** Fifty looks: the event is late only on a machine that runs nothing for seconds. */
const ARRIVES_WITHIN_MS = 50 * POLL_MS
const ctx = await build(t, { EVENTS_HEARTBEAT_MS: 300, EVENTS_POLL_MS: POLL_MS })
const { app } = ctx
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
const editor = await session(ctx, 'editor', 'org-a')

interface Message { id?: string, event?: string, data?: string }
interface Stream {
  status: number
  contentType: string
  messages: Message[]
  comments: string[]
  next: (n?: number, ms?: number) => Promise<Message[]>
  /** Until the comment `text` has come (true), or `ms` have passed (false). */
  heard: (text: string, ms: number) => Promise<boolean>
  close: () => void
}

function open (headers: Record<string, string>): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/events/stream`, { headers: { ...editor.headers, ...headers } }, (res) => {
      const messages: Message[] = []
      const comments: string[] = []
      let waiting: (() => void) | undefined
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const m: Message = {}
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) { comments.push(line.slice(1).trim()); continue }
            const [field, ...rest] = line.split(': ')
            if (field === 'id' || field === 'event' || field === 'data') m[field] = rest.join(': ')
          }
          if (m.data !== undefined) messages.push(m)
        }
        waiting?.()
      })
      const until = async (done: () => boolean, ms: number): Promise<void> => {
        const end = Date.now() + ms
        while (!done() && Date.now() < end) {
          await new Promise<void>((r) => { waiting = r; setTimeout(r, 100) })
        }
      }
      let seen = 0
      const next = async (n = 1, ms = 5000): Promise<Message[]> => {
        await until(() => messages.length >= seen + n, ms)
        const got = messages.slice(seen, seen + n)
        seen += got.length
        return got
      }
      const heard = async (text: string, ms: number): Promise<boolean> => {
        await until(() => comments.includes(text), ms)
        return comments.includes(text)
      }
      resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), messages, comments, next, heard, close: () => req.destroy() })
    })
    req.on('error', reject)
  })
}

async function create (id: string, x: number): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature(id, { coordinates: square(x, 10) })) })
  if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode} ${res.body}`)
  return res.json().id
}

t.test('live events, a heartbeat, and a resume with Last-Event-ID that misses nothing', async (t) => {
  const s = await open({})
  t.equal(s.status, 200)
  t.match(s.contentType, /^text\/event-stream/)
  const a = await create('live-1', 0)
  const t0 = Date.now()
  const [first] = await s.next(1, 2 * ARRIVES_WITHIN_MS)
  t.ok(first !== undefined, 'the event arrives')
  t.ok(Date.now() - t0 < ARRIVES_WITHIN_MS, `within ${Date.now() - t0} ms (at most ${ARRIVES_WITHIN_MS})`)
  t.equal(first?.event, 'source.created')
  t.match(JSON.parse(first?.data ?? '{}'), { specversion: '1.0', type: 'source.created', subject: a })
  // Every 300 ms here (EVENTS_HEARTBEAT_MS); the deadline only bounds a stream that sends none.
  t.ok(await s.heard('heartbeat', 10_000), `a heartbeat comment: ${JSON.stringify(s.comments)}`)
  s.close()

  const missed = [await create('live-2', 3), await create('live-3', 6)]
  const again = await open({ 'last-event-id': first?.id as string })
  const got = await again.next(2)
  t.same(got.map((m) => JSON.parse(m.data as string).subject), missed, 'exactly the missed events, in order')
  const more = await again.next(1, 800)
  t.same(more, [], 'and nothing twice')
  again.close()
})

t.test('a forged Last-Event-ID is a 400', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/events/stream', headers: { ...editor.headers, 'last-event-id': '1.2.AAAAAAAAAAAAAAAAAAAAAA' } })
  expectError(t, res, 400, 'INVALID_CURSOR')
  const q = await app.inject({ method: 'GET', url: '/events/stream?after=nonsense', headers: editor.headers })
  expectError(t, q, 400, 'INVALID_CURSOR')
})

t.test('GET /asyncapi.json: an AsyncAPI 3 document of every event type', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/asyncapi.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.asyncapi, '3.0.0')
  t.same(Object.values(doc.components.messages).map((m) => (m as { name: string }).name).sort(), [...EVENT_TYPES].sort())
  t.ok(doc.channels.stream && doc.channels.webhook)
})
