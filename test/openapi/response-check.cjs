// Holds every response a Fastify instance of this process sends against the OpenAPI document
// that instance serves (GET /openapi.json). Plain CommonJS, so the service the tests spawn loads
// it too, before the ES module loader starts (as dist/main.cjs needs): `node --require
// ./test/openapi/service-check.cjs dist/main.cjs`.
//
// Fastify announces each instance it creates on the diagnostics channel 'fastify.initialization',
// before any plugin is registered, so an onSend hook added there reaches every route, the
// not-found handler and the error handler. For each response it finds the document's operation
// for the method and path, then: the status must be one the operation lists, the Content-Type one
// that status lists, and the body (streamed and pre-serialised ones included: what goes on the
// wire) valid against that media type's schema, checked by openapi-response-validator. A path the
// document does not list must be a 404, a listed path asked with a method it does not list a 405
// whose Allow names the document's methods (components.responses NotFound, MethodNotAllowed).
// Problems go to `report`; the response itself is sent unchanged.
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, for a --require preload */
const diagnostics = require('node:diagnostics_channel')
const { Transform } = require('node:stream')
const OpenAPIResponseValidator = require('openapi-response-validator').default
const { fullFormats } = require('ajv-formats/dist/formats.js')

const DOCUMENT_URL = '/openapi.json'
// Files under these prefixes are served by @fastify/static, hidden from the document: they are
// the map page's assets, not operations, and a file path may hold '/', which a path template
// cannot. A file that is not there is the not-found handler's, checked like any unlisted path.
const STATIC_PREFIXES = ['/map/static/', '/map/leaflet/', '/map/vectorgrid/']
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
// Marks the check's own request for the document, which is not itself checked.
const OWN_REQUEST = 'x-openapi-response-check'

/**
 * Subscribes to every Fastify instance created from now on in this process.
 * @param {{ report: (violation: { operation: string, status: number, url: string, requestId: string, problems: string[] }) => void }} options
 */
function checkResponses ({ report }) {
  diagnostics.subscribe('fastify.initialization', ({ fastify }) => watch(fastify, report))
}

function watch (fastify, report) {
  let checker
  // The document as the instance serves it; if it cannot be had, every response says so.
  const documentOf = () => (checker ??= fastify.inject({ method: 'GET', url: DOCUMENT_URL, headers: { [OWN_REQUEST]: '1' } })
    .then((res) => res.statusCode === 200 ? new DocumentChecker(res.json()) : new MissingDocument(`GET ${DOCUMENT_URL} answered ${res.statusCode}`),
      (err) => new MissingDocument(`GET ${DOCUMENT_URL} failed: ${err.message}`)))

  fastify.addHook('onSend', async (request, reply, payload) => {
    // A bare instance of a test (a plugin on its own) has no document to hold its responses to.
    if (!fastify.hasDecorator('swagger')) return payload
    if (request.headers[OWN_REQUEST] !== undefined) return payload
    const path = request.url.split('?')[0] ?? ''
    if (STATIC_PREFIXES.some((prefix) => path.startsWith(prefix)) && reply.statusCode !== 404 && reply.statusCode !== 405) return payload
    // A client already gone (499 in the log, plugins/large-bodies.ts) receives nothing.
    if (reply.raw.closed || reply.raw.destroyed) return payload
    const document = await documentOf()
    const response = {
      method: request.method,
      url: request.url,
      path,
      status: reply.statusCode,
      headers: reply.getHeaders(),
      requestId: String(request.id)
    }
    const check = (body) => {
      const problems = document.problems({ ...response, body })
      if (problems.length > 0) report({ operation: document.operationName(response), status: response.status, url: response.url, requestId: response.requestId, problems })
    }
    if (payload !== null && typeof payload === 'object' && typeof payload.pipe === 'function') {
      // A stream: checked once all of it has passed, before its end reaches the client.
      const chunks = []
      const tee = new Transform({
        transform (chunk, _encoding, done) { chunks.push(Buffer.from(chunk)); done(null, chunk) },
        flush (done) { check(Buffer.concat(chunks)); done() }
      })
      payload.on('error', (err) => tee.destroy(err))
      return payload.pipe(tee)
    }
    check(payload === undefined || payload === null ? Buffer.alloc(0) : Buffer.from(payload))
    return payload
  })
}

/** One line for a test's failure: the operation, the status, the request, what is wrong. */
function describeViolation ({ operation, status, url, requestId, problems }) {
  return `response outside /openapi.json: ${operation} -> ${status} (${url}, request ${requestId}): ${problems.join('; ')}`
}

/** How service-check.cjs starts the line it writes for each violation. */
const SERVICE_MARK = 'openapi-response-check: '

module.exports = { SERVICE_MARK, checkResponses, describeViolation }

/** Media type "type/subtype; a=b" → { type, params }, lower-cased, quotes removed. */
function mediaType (text) {
  const [type = '', ...rest] = String(text).split(';')
  const params = {}
  for (const part of rest) {
    const [key, value = ''] = part.split('=')
    if (key?.trim()) params[key.trim().toLowerCase()] = value.trim().replace(/^"(.*)"$/, '$1')
  }
  return { type: type.trim().toLowerCase(), params }
}

class MissingDocument {
  constructor (reason) { this.reason = reason }
  operationName ({ method, path }) { return `${method} ${path}` }
  problems () { return [`no document to check against: ${this.reason}`] }
}

class DocumentChecker {
  constructor (document) {
    this.document = document
    this.validators = new Map()
    // Concrete paths before templated ones, as OpenAPI matches them.
    this.paths = Object.keys(document.paths ?? {})
      .map((template) => ({
        template,
        templated: template.includes('{'),
        pattern: new RegExp(`^${template.split(/\{[^}]+\}/).map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+')}$`)
      }))
      .sort((a, b) => Number(a.templated) - Number(b.templated))
  }

  /** The document's path for a request path; the router ignores a trailing slash, so either form. */
  pathOf (path) {
    const forms = [path, path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : `${path}/`]
    for (const form of forms) {
      const found = this.paths.find((p) => p.pattern.test(form))
      if (found !== undefined) return found.template
    }
    return undefined
  }

  /** The methods the document lists on a path, both forms of it; GET implies HEAD. */
  methodsOf (template) {
    const twin = template.endsWith('/') ? template.slice(0, -1) : `${template}/`
    const methods = new Set()
    for (const item of [this.document.paths[template], this.document.paths[twin]]) {
      for (const method of METHODS) if (item?.[method] !== undefined) methods.add(method.toUpperCase())
    }
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods].sort()
  }

  /** An operation and the method that names it: a HEAD is its GET's. */
  operationOf (method, template) {
    const item = template === undefined ? undefined : this.document.paths[template]
    const key = method === 'HEAD' && item?.head === undefined ? 'get' : method.toLowerCase()
    return item?.[key]
  }

  operationName ({ method, path }) {
    const template = this.pathOf(path)
    const operation = this.operationOf(method, template)
    if (operation === undefined) return `${method} ${path} (${template === undefined ? 'no such path in the document' : 'no such operation in the document'})`
    return `${method} ${template}${operation.operationId !== undefined ? ` (${operation.operationId})` : ''}`
  }

  resolve (response) {
    const ref = response?.$ref
    if (typeof ref !== 'string') return response
    return this.document.components?.responses?.[ref.replace('#/components/responses/', '')]
  }

  /** Everything about a response that is outside the document: [] when it is inside. */
  problems ({ method, path, status, headers, body }) {
    const template = this.pathOf(path)
    const operation = this.operationOf(method, template)
    let declared
    let key
    if (template === undefined) {
      if (status !== 404) return [`${status} for a path the document does not list (only 404, components.responses.NotFound, is)`]
      ;[declared, key] = [this.resolve({ $ref: '#/components/responses/NotFound' }), '404']
    } else if (operation === undefined) {
      if (status !== 405) return [`${status} for ${method}, which the document does not list on ${template} (only 405, components.responses.MethodNotAllowed, is)`]
      const allowed = this.methodsOf(template).join(', ')
      const allow = String(headers.allow ?? '').split(',').map((m) => m.trim()).filter(Boolean).sort().join(', ')
      if (allow !== allowed) return [`405 with Allow "${allow}", the document lists ${allowed} on ${template}`]
      ;[declared, key] = [this.resolve({ $ref: '#/components/responses/MethodNotAllowed' }), '405']
    } else {
      const responses = operation.responses ?? {}
      key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => responses[k] !== undefined)
      if (key === undefined) return [`status ${status} is not a response of this operation (it lists ${Object.keys(responses).join(', ')})`]
      declared = this.resolve(responses[key])
    }
    if (declared === undefined) return [`no response ${key} in the document`]

    const sent = headers['content-type']
    const content = declared.content
    if (content === undefined || Object.keys(content).length === 0) {
      return body.length === 0 || method === 'HEAD' ? [] : [`a body of ${body.length} bytes (${sent ?? 'no Content-Type'}), where the document's ${key} has none`]
    }
    if (sent === undefined) return [`no Content-Type, where the document's ${key} is ${Object.keys(content).join(' or ')}`]
    const received = mediaType(sent)
    const match = Object.keys(content).find((declaredType) => {
      const expected = mediaType(declaredType)
      return expected.type === received.type && Object.entries(expected.params).every(([k, v]) => received.params[k] === v)
    })
    if (match === undefined) return [`Content-Type ${sent}, where the document's ${key} is ${Object.keys(content).join(' or ')}`]
    if (content[match].schema === undefined) return []

    if (method === 'HEAD' && body.length === 0) return []
    let value = body.toString('utf8')
    if (/[/+]json$/.test(received.type)) {
      try {
        value = JSON.parse(value)
      } catch {
        return [`a body that is not JSON, sent as ${sent}: ${value.slice(0, 80)}`]
      }
    }
    const errors = this.validator(template ?? '*', method, key, match, declared, content[match]).validateResponse(key, value)
    return errors === undefined ? [] : errors.errors.map((e) => `${e.path === '' ? 'body' : `/${e.path}`} ${e.message}`)
  }

  validator (template, method, key, type, declared, media) {
    const id = `${method} ${template} ${key} ${type}`
    let validator = this.validators.get(id)
    if (validator === undefined) {
      validator = new OpenAPIResponseValidator({
        responses: { [key]: { description: declared.description, content: { [type]: media } } },
        components: this.document.components,
        customFormats: { 'date-time': fullFormats['date-time'].validate },
        // Ajv's own words, with the member it is about.
        errorTransformer: (mapped, error) => ({ ...mapped, message: `${error.message}${error.params?.additionalProperty !== undefined ? `: ${error.params.additionalProperty}` : ''}` })
      })
      this.validators.set(id, validator)
    }
    return validator
  }
}
