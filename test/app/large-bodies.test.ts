// Admission of large POST /sources bodies: LARGE_BODY_CONCURRENCY at a time, LARGE_BODY_QUEUE
// waiting in order, 503 with Retry-After beyond; small bodies and reads never wait; a client that
// goes away gives its place back. Over real sockets, so a body can be left half sent.
import t from 'tap'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import largeBodiesPlugin from '../../src/plugins/large-bodies.js'
import { AdmissionQueue } from '../../src/http/admission-queue.js'
import { build, collection, expectError, feature, session, square, testConfig } from '../helper.js'

t.test('AdmissionQueue: slots, order, a full queue, release once, cancel', async (t) => {
  const q = new AdmissionQueue(1, 2)
  const first = await q.admit(() => {})
  t.type(first, 'function')
  const order: string[] = []
  let cancelSecond: (() => void) | undefined
  const second = q.admit((c) => { cancelSecond = c }).then((r) => { order.push('second'); return r })
  const third = q.admit(() => {}).then((r) => { order.push('third'); return r })
  t.equal(await q.admit(() => {}), 'full', 'a full queue answers at once')
  t.same(q.stats, { active: 1, waiting: 2 })
  cancelSecond?.()
  t.same(q.stats, { active: 1, waiting: 1 }, 'a cancelled entry leaves the queue')
  t.equal(await second, 'cancelled', 'and its caller learns it')
  if (typeof first !== 'function') throw new Error('unreachable')
  first(); first()
  const r3 = await third
  t.same(order, ['second', 'third'], 'the slot went to the next waiting entry; releasing twice freed nothing more')
  t.same(q.stats, { active: 1, waiting: 0 })
  if (typeof r3 === 'function') r3()
  t.same(q.stats, { active: 0, waiting: 0 })
})

t.test('over HTTP', async (t) => {
  const ctx = await build(t, { LARGE_BODY_BYTES: 400, LARGE_BODY_CONCURRENCY: 1, LARGE_BODY_QUEUE: 1, BODY_LIMIT_BYTES: 4096 })
  const editor = await session(ctx, 'editor', 'org-a')
  await ctx.app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = ctx.app.server.address() as AddressInfo
  let n = 0
  // Over 400 bytes through a foreign member; each body a new feature id.
  const largeBody = () => JSON.stringify({ ...collection(feature(`large-${++n}`, { coordinates: square(n, 0, 0.5) })), padding: 'x'.repeat(400) })

  /** Sends the headers and all but the last byte of a large body; `finish` sends the rest. */
  function halfSent () {
    const body = largeBody()
    const socket: Socket = connect(port, '127.0.0.1')
    let response = ''
    socket.on('data', (d) => { response += d.toString() })
    const done = new Promise<string>((resolve) => socket.on('close', () => resolve(response)))
    socket.write(`POST /sources HTTP/1.1\r\nhost: x\r\nauthorization: ${editor.headers.authorization}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body.slice(0, -1)}`)
    return { socket, done, finish: () => socket.write(body.slice(-1)) }
  }
  const post = (body: string) => fetch(`http://127.0.0.1:${port}/sources`, { method: 'POST', headers: { ...editor.headers, 'content-type': 'application/json' }, body })
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200))
  const within = <T>(p: Promise<T>, what: string) => Promise.race([p, new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`${what}: still waiting after 5 s`)), 5000))])

  // Each request authenticates first (a database read on the server backend): half a second is
  // ample for a to hold the slot, then for b to take the queue place, even on a loaded machine.
  const queued = () => new Promise((resolve) => setTimeout(resolve, 500))
  const a = halfSent()
  await queued()
  const b = post(largeBody()) // waits for a's slot
  await queued()
  const c = await post(largeBody())
  const text = await c.text()
  const body = expectError(t, { statusCode: c.status, body: text, json: () => JSON.parse(text) }, 503, 'SERVICE_UNAVAILABLE')
  t.equal(c.headers.get('retry-after'), '1')
  t.match(body.message, /busy with other large requests/)

  // The one slot (a) and the one queue place (b) are taken: a request that needed a place would
  // get the 503 above, so a 413 here was answered without queueing.
  const tooLarge = await within(post(JSON.stringify({ ...collection(feature('too-large')), padding: 'x'.repeat(5000) })), 'a body over BODY_LIMIT_BYTES')
  const tooLargeText = await tooLarge.text()
  expectError(t, { statusCode: tooLarge.status, body: tooLargeText, json: () => JSON.parse(tooLargeText) }, 413, 'PAYLOAD_TOO_LARGE')
  t.equal(await Promise.race([b.then(() => 'answered'), settle().then(() => 'waiting')]), 'waiting',
    'a body over BODY_LIMIT_BYTES got its 413 while the slot and the queue were full: it took no place in the queue')

  const small = await post(JSON.stringify(collection(feature('small', { coordinates: square(50, 50, 0.5) }))))
  t.equal(small.status, 201, 'a small body does not wait')
  const read = await fetch(`http://127.0.0.1:${port}/sources/?id=${((await small.json()) as { id: string }).id}`, { headers: editor.headers })
  t.equal(read.status, 200, 'reads do not wait')

  a.finish()
  t.match(await within(a.done, 'a'), /^HTTP\/1\.1 201 /, 'the admitted request completes')
  t.equal((await within(b, 'b')).status, 201, 'the waiting request runs once the slot is free')

  // A client that goes away, admitted or waiting, gives its place back.
  const d = halfSent()
  await settle()
  const e = halfSent()
  await settle()
  e.socket.destroy()
  d.socket.destroy()
  await settle()
  t.equal((await within(post(largeBody()), 'after the clients left')).status, 201, 'slot and queue place were given back')
  // Clients that go away before the body hook runs (while authentication is still going on)
  // must not take a slot either: ten of them, with one slot.
  for (let i = 0; i < 10; i++) {
    const body = largeBody()
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST /sources HTTP/1.1\r\nhost: x\r\nauthorization: ${editor.headers.authorization}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`)
      setImmediate(() => socket.destroy())
    })
    socket.on('error', () => {})
  }
  await settle()
  t.equal((await within(post(largeBody()), 'after clients left during authentication')).status, 201, 'no slot was kept by a client that left early')
  const f = halfSent()
  await settle()
  const g = post(largeBody())
  await settle()
  f.finish()
  t.match(await within(f.done, 'f'), /^HTTP\/1\.1 201 /)
  t.equal((await within(g, 'g')).status, 201)
})

t.test('a slot is held until the handler has answered, even when its client left', async (t) => {
  // A bare app with the plugin and one route whose validation step and handler wait for the test.
  const app = Fastify()
  await app.register(largeBodiesPlugin, { config: testConfig({ LARGE_BODY_BYTES: 10, LARGE_BODY_CONCURRENCY: 1, LARGE_BODY_QUEUE: 10 }) })
  const gates = new Map<string, { validated: Promise<void>, handled: Promise<void>, validate: () => void, handle: () => void }>()
  const gate = (name: string) => {
    let validate!: () => void
    let handle!: () => void
    const g = { validated: new Promise<void>((resolve) => { validate = resolve }), handled: new Promise<void>((resolve) => { handle = resolve }), validate: () => validate(), handle: () => handle() }
    gates.set(name, g)
    return g
  }
  const events: string[] = []
  app.post<{ Querystring: { name: string } }>('/work', {
    ...app.largeBodies,
    preValidation: async (request) => { await gates.get(request.query.name)?.validated }
  }, async (request) => {
    events.push(`start ${request.query.name}`)
    await gates.get(request.query.name)?.handled
    events.push(`end ${request.query.name}`)
    return { ok: true }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const { port } = app.server.address() as AddressInfo
  const send = (name: string) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    let response = ''
    socket.on('data', (d) => { response += d.toString() })
    const done = new Promise<string>((resolve) => socket.on('close', () => resolve(response)))
    const body = JSON.stringify({ padding: 'x'.repeat(100) })
    socket.write(`POST /work?name=${name} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`)
    return { socket, done }
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 100))

  // a is in its handler when its client leaves; b must not start until a's handler is done.
  const a = gate('a'); a.validate()
  const clientA = send('a')
  await settle()
  t.same(events, ['start a'])
  clientA.socket.destroy()
  const b = gate('b'); b.validate(); b.handle()
  const clientB = send('b')
  await settle()
  t.same(events, ['start a'], 'b waits: a still holds the slot though its client left')
  a.handle()
  t.match(await clientB.done, /^HTTP\/1\.1 200 /)
  t.same(events, ['start a', 'end a', 'start b', 'end b'])

  // c's client leaves after its body was read, before its handler: the handler never runs and
  // the slot is free for d.
  const c = gate('c')
  const clientC = send('c')
  await settle()
  clientC.socket.destroy()
  await settle()
  c.validate()
  await settle()
  const d = gate('d'); d.validate(); d.handle()
  t.match(await send('d').done, /^HTTP\/1\.1 200 /)
  t.same(events.slice(4), ['start d', 'end d'], 'the handler of a client that left before it ran is skipped')
})
