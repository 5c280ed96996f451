// The response check (response-check.cjs) finds what it is there to find: on a small app whose
// document says one thing and whose routes send another, each kind of response outside the
// document is reported (an undeclared status, a Content-Type not listed, a pre-serialised or
// streamed body off its schema, a path or a method not in the document), and responses inside it
// are not. Without helper.ts, whose own check would fail this file on purpose-made violations.
import { Readable } from 'node:stream'
import t from 'tap'
import Fastify, { type FastifyReply } from 'fastify'
import swagger from '@fastify/swagger'
import { Type } from '@sinclair/typebox'
import { type Violation, checkResponses } from './response-check.cjs'

const found: Violation[] = []
checkResponses({ report: (violation) => { found.push(violation) } })

const app = Fastify()
await app.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 'check', version: '1' } } })
const Thing = Type.Object({ id: Type.String(), size: Type.Integer() }, { additionalProperties: false })
const geojson = (description: string) => ({ description, content: { 'application/geo+json': { schema: Thing } } })
app.get('/openapi.json', { schema: { response: { 200: { description: 'doc', content: { 'application/json': { schema: Type.Object({}, { additionalProperties: true }) } } } } } }, async () => app.swagger())
app.get('/things/:id', {
  schema: { params: Type.Object({ id: Type.String() }), response: { 200: geojson('a thing'), 404: Type.Object({ message: Type.String() }) } }
}, async (request, reply) => {
  const untyped: FastifyReply = reply
  const id = (request.params as { id: string }).id
  if (id === 'good') return untyped.type('application/geo+json').send('{"id":"good","size":1}')
  if (id === 'extra') return untyped.type('application/geo+json').send('{"id":"extra","size":1,"colour":"red"}')
  if (id === 'wrong-type') return untyped.type('application/geo+json').send(Buffer.from('{"id":"wrong-type","size":"big"}'))
  if (id === 'text') return untyped.type('text/plain').send('{"id":"text","size":1}')
  if (id === 'teapot') return untyped.code(418).send({ message: 'no' })
  if (id === 'stream-bad') return untyped.type('application/geo+json').send(Readable.from(['{"id":"stream-bad",', '"size":1.5}']))
  if (id === 'stream-good') return untyped.type('application/geo+json').send(Readable.from(['{"id":"stream-good",', '"size":2}']))
  return untyped.code(404).send({ message: 'none' })
})
app.setNotFoundHandler((request, reply) => {
  const known = request.url.startsWith('/things/')
  void reply.code(known ? 405 : 404).header('allow', known ? 'GET, HEAD, POST' : undefined).send({ message: 'no' })
})
await app.ready()
t.teardown(() => app.close())

const expected: Array<[string, string, RegExp | null]> = [
  ['GET', '/things/good', null],
  ['GET', '/things/missing', null],
  ['GET', '/things/stream-good', null],
  ['HEAD', '/things/good', null],
  ['GET', '/things/extra', /additional properties: colour/],
  ['GET', '/things/wrong-type', /size must be integer/],
  ['GET', '/things/text', /Content-Type text\/plain.*application\/geo\+json/],
  ['GET', '/things/teapot', /status 418 is not a response of this operation/],
  ['GET', '/things/stream-bad', /size must be integer/],
  ['GET', '/nowhere', /no response 404 in the document/],
  ['DELETE', '/things/good', /405 with Allow "GET, HEAD, POST", the document lists GET, HEAD/],
  ['POST', '/things/a/b', /405 for a path the document does not list/]
]

for (const [method, url, problem] of expected) {
  t.test(`${method} ${url}`, async (t) => {
    found.length = 0
    const res = await app.inject({ method: method as 'GET', url })
    if (problem === null) {
      t.same(found, [], `${res.statusCode}: inside the document`)
    } else {
      t.equal(found.length, 1, `${res.statusCode}: reported once`)
      t.match(found[0]?.problems.join('; '), problem)
      t.equal(found[0]?.status, res.statusCode)
      t.equal(found[0]?.url, url)
    }
  })
}
