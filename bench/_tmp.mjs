import Fastify from 'fastify'
import { connect } from 'node:net'
const app = Fastify()
const log = (m) => console.log(Date.now() % 100000, m)
app.post('/x', {
  preHandler: async (req) => { log('preHandler ' + req.url) },
  onSend: async (req, reply, p) => { log('onSend ' + req.url + ' closed=' + reply.raw.closed); return p },
  onResponse: async (req) => { log('onResponse ' + req.url) },
  onRequestAbort: async (req) => { log('abort ' + req.url) }
}, async (req, reply) => {
  await new Promise((r) => setTimeout(r, 300))
  if (req.query.fail) throw new Error('boom')
  return reply.code(201).send({ ok: 1 })
})
await app.listen({ port: 0 })
const port = app.server.address().port
for (const q of ['', '?fail=1']) {
  const s = connect(port, '127.0.0.1', () => { s.write(`POST /x${q} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`); setTimeout(() => { log('client destroy'); s.destroy() }, 50) })
  s.on('error', () => {})
  await new Promise((r) => setTimeout(r, 600))
}
// aborted mid body
const s = connect(port, '127.0.0.1', () => { s.write(`POST /x?mid HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\r\n{"a"`); setTimeout(() => { log('client destroy mid'); s.destroy() }, 50) })
s.on('error', () => {})
await new Promise((r) => setTimeout(r, 600))
await app.close()
