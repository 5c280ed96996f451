// lingerBeforeClose (src/http/lingering-close.ts) replaces socket.destroySoon, which Node's HTTP
// server calls, undocumented, to close a `Connection: close` response's socket once it is
// written. This fails when a Node release stops doing so, before clients start losing 413s.
import t, { type Test } from 'tap'
import { type Server, createServer } from 'node:http'
import { type AddressInfo, Socket, connect } from 'node:net'
import { once } from 'node:events'
import { endLingering, lingerBeforeClose } from '../../src/http/lingering-close.js'
import { build } from '../helper.js'

t.test("Node's HTTP server closes a Connection: close response with socket.destroySoon()", async (t) => {
  t.type(Socket.prototype.destroySoon, 'function', 'net.Socket still has destroySoon')
  let called = 0
  const server = createServer((req, res) => {
    const socket = req.socket
    const original = socket.destroySoon.bind(socket)
    socket.destroySoon = () => { called++; original() }
    res.writeHead(200, { connection: 'close', 'content-length': '2' }).end('ok')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  t.equal(await response.text(), 'ok')
  t.equal(called, 1, 'destroySoon was called once, after the response')
})

t.test('lingerBeforeClose: an answer sent before the body was read still reaches a client that goes on sending', async (t) => {
  const server = createServer((req, res) => {
    lingerBeforeClose(req.socket, server)
    res.writeHead(413, { connection: 'close', 'content-length': '8' }).end('too big\n')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
  let received = ''
  socket.on('data', (d) => { received += d.toString() })
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.on('error', () => {})
  const chunk = 'x'.repeat(64 * 1024)
  socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${8 * 1024 * 1024}\r\n\r\n`)
  // Keeps sending after the answer: without lingering, the server's close resets the connection
  // and the unread answer is lost on the client's side.
  for (let i = 0; i < 64 && !socket.destroyed; i++) {
    socket.write(chunk)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  socket.end()
  await closed
  t.match(received, /^HTTP\/1\.1 413 /, 'the client read the 413')
  t.match(received, /too big\n$/)
})

/** A server that answers 413 at once and lingers, and a raw client that has sent the headers of a 64 MiB body. */
async function lingering (t: Test) {
  const server = createServer((req, res) => {
    lingerBeforeClose(req.socket, server)
    res.writeHead(413, { connection: 'close', 'content-length': '8' }).end('too big\n')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  // Half open, as an HTTP client still sending its body: the server's FIN after the answer does not end the client's side.
  const socket = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true })
  const errors: Error[] = []
  socket.on('error', (e) => errors.push(e))
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())))
  const answered = once(socket, 'data')
  socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${64 * 1024 * 1024}\r\n\r\n`)
  // The 413 came: the server holds the connection and lingers from here.
  await answered
  socket.resume()
  return { server, socket, errors, closed }
}

t.test('lingerBeforeClose: a body still coming after 5 s is read on (nginx lingering_time), not reset', async (t) => {
  const { socket, errors, closed } = await lingering(t)
  const until = Date.now() + 6_500
  const chunk = 'x'.repeat(16 * 1024)
  while (Date.now() < until && !socket.destroyed) {
    socket.write(chunk)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.notOk(socket.destroyed, 'the connection was still open after 6.5 s of sending')
  socket.end()
  await closed
  t.same(errors.map((e) => (e as NodeJS.ErrnoException).code), [], 'no reset while the client was sending')
})

/** The server's open connections. */
const connectionsOf = async (server: Server): Promise<number> => await new Promise((resolve, reject) => server.getConnections((e, n) => { if (e) reject(e); else resolve(n) }))

t.test('lingerBeforeClose: a client that stops sending is closed after 5 s without a byte (nginx lingering_timeout)', async (t) => {
  const { server, socket } = await lingering(t)
  // Sending for 2 s first: the 5 s are counted from the last byte, not from the answer.
  const until = Date.now() + 2_000
  while (Date.now() < until) {
    socket.write('x'.repeat(1024))
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const stopped = Date.now()
  // The server's side of the connection: gone once it destroys the socket (the client, half open, is not told until it writes).
  while (await connectionsOf(server) > 0 && Date.now() - stopped < 20_000) await new Promise((resolve) => setTimeout(resolve, 100))
  const after = Date.now() - stopped
  t.equal(await connectionsOf(server), 0, 'the server closed the connection')
  t.ok(after >= 4_500, `closed ${after} ms after the last byte, not before 5 s`)
  socket.destroy()
})

t.test('endLingering ends the lingering sockets of that server at once', async (t) => {
  const { server, socket } = await lingering(t)
  socket.write('x'.repeat(1024))
  t.equal(await connectionsOf(server), 1, 'lingering')
  endLingering(server)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(await connectionsOf(server), 0, 'ended')
  socket.destroy()
})

t.test("the service's shutdown does not wait for a client still sending a refused body", async (t) => {
  const { app } = await build(t, { BODY_LIMIT_BYTES: 4096 })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const socket = connect({ port: (app.server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true })
  socket.on('error', () => {})
  const answered = once(socket, 'data')
  socket.write(`POST /token HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${64 * 1024 * 1024}\r\n\r\n`)
  const [answer] = await answered as [Buffer]
  t.match(answer.toString(), /^HTTP\/1\.1 413 /, 'the 413')
  // Still sending while the service closes: without endLingering, close waited for this connection up to 30 s.
  let sending = true
  void (async () => { while (sending && !socket.destroyed) { socket.write('x'.repeat(1024)); await new Promise((resolve) => setTimeout(resolve, 50)) } })()
  const started = Date.now()
  await app.close()
  sending = false
  const took = Date.now() - started
  t.ok(took < 4_000, `closed in ${took} ms`)
  socket.destroy()
})
