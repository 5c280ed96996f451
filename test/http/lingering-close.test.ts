// lingerBeforeClose (src/http/lingering-close.ts) replaces socket.destroySoon, which Node's HTTP
// server calls, undocumented, to close a `Connection: close` response's socket once it is
// written. This fails when a Node release stops doing so, before clients start losing 413s.
import t from 'tap'
import { createServer } from 'node:http'
import { type AddressInfo, Socket, connect } from 'node:net'
import { lingerBeforeClose } from '../../src/http/lingering-close.js'

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
    lingerBeforeClose(req.socket)
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
