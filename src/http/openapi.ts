// Responses in the OpenAPI document that a route's plain response schema would not describe:
// a body in a media type of its own (GeoJSON, JSON Schema, HTML), which is also how a body a route
// sends pre-serialised is documented, and a response without a body (a redirect, 304).
// @fastify/swagger turns `content` into the response's content and `headers` into its headers.
import type { SwaggerTransformObject } from '@fastify/swagger'
import type { TSchema } from '@sinclair/typebox'
import type { OpenAPIV3 } from 'openapi-types'
import type { HeaderDoc } from '../schemas/primitives.js'

/** The media type of an OpenAPI 3.0 definition (OGC API – Features' service-desc). */
export const OPENAPI_MEDIA_TYPE = 'application/vnd.oai.openapi+json;version=3.0'

/** A response whose body is `schema`, sent as `mediaType`. */
export function sentAs<T extends TSchema> (mediaType: string, schema: T, description: string, headers?: Record<string, HeaderDoc>) {
  return { description, ...(headers !== undefined ? { headers } : {}), content: { [mediaType]: { schema } } }
}

/** A response without a body. */
export function noBody (description: string, headers?: Record<string, HeaderDoc>) {
  return { type: 'null' as const, description, ...(headers !== undefined ? { headers } : {}) }
}

/** The registered error body schemas are named by their $id (Error404, …) in the document's components. */
export const refResolver = {
  buildLocalReference: (json: Record<string, unknown>, _baseUri: unknown, _fragment: string, i: number): string =>
    typeof json.$id === 'string' ? json.$id : `def-${i}`
}

const DESCRIPTION = `Register areas (GeoJSON polygons) with a validity period; read them back one by one or as OGC API – Features.

Every operation needs \`Authorization: Bearer <token>\` (POST /token) unless its \`security\` is empty.
A path not listed here is answered 404 (\`#/components/responses/NotFound\`); a listed path asked with a method it does not list, 405 with Allow (\`#/components/responses/MethodNotAllowed\`).
A trailing slash is ignored: /sources and /sources/ are one resource (both forms are listed for GET, PUT, PATCH and DELETE /sources/?id=).
Every GET is also answered to HEAD: the same status and headers, no body. Every answer of an operation carries X-Request-ID (the client's own when it sends a well-formed one).
A request that is not HTTP/1.1, whose head is over the header limit, or that does not arrive in time is answered 400, 431 or 408 (Error400, Error431, Error408) before it reaches an operation, and its connection is closed.`

/**
 * The seed's clients call GET and DELETE /sources/?id= (with the slash), and PUT and PATCH are
 * written the same way (issue 34); the router serves both forms (ignoreTrailingSlash), so the
 * document lists both: the slashed one first.
 */
function withSeedPaths (doc: Partial<OpenAPIV3.Document>): Partial<OpenAPIV3.Document> {
  const plain = doc.paths?.['/sources']
  if (doc.paths === undefined || plain?.get === undefined || plain.delete === undefined) return doc
  const seeded = (['get', 'put', 'patch', 'delete'] as const).filter((m) => plain[m] !== undefined)
  const renamed = (op: OpenAPIV3.OperationObject): OpenAPIV3.OperationObject => ({ ...op, operationId: `${op.operationId ?? ''}WithoutSlash` })
  const paths: OpenAPIV3.PathsObject = {}
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path === '/sources') {
      paths['/sources/'] = Object.fromEntries(seeded.map((m) => [m, plain[m]]))
      paths['/sources'] = { ...item, ...Object.fromEntries(seeded.map((m) => [m, renamed(plain[m] as OpenAPIV3.OperationObject)])) }
    } else {
      paths[path] = item
    }
  }
  return { ...doc, paths }
}

/**
 * Where a route's schema describes properties named "$…" (a JSON Schema document's own "$schema"
 * and "$id"), keyed without their "$": written as properties, @fastify/swagger's resolver would
 * take a property "$id" for a schema id. The document's transform moves them into `properties`.
 */
export const DOLLAR_PROPERTIES = 'x-dollar-properties'

/** The document with each DOLLAR_PROPERTIES member made the property "$" + its name. */
function withDollarProperties (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withDollarProperties)
  if (typeof node !== 'object' || node === null) return node
  const { [DOLLAR_PROPERTIES]: dollar, ...rest } = node as Record<string, unknown>
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, withDollarProperties(v)]))
  if (typeof dollar !== 'object' || dollar === null) return out
  const named = Object.fromEntries(Object.entries(dollar).map(([k, v]) => [`$${k}`, v]))
  return { ...out, properties: { ...named, ...(out.properties as Record<string, unknown> | undefined) } }
}

/**
 * @fastify/swagger's options. OpenAPI 3.0.3, not 3.1: the conformance page declares OGC API –
 * Features' class oas30, which asks for an OpenAPI 3.0 definition (Part 1 has no 3.1 class), and
 * everything sent is said in 3.0 (nullable for an open end of an interval). Bearer by default;
 * the public operations say `security: []`.
 */
export const swaggerOptions = {
  openapi: {
    openapi: '3.0.3',
    info: { title: 'Source Registry', version: '1.0.0', description: DESCRIPTION },
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http' as const, scheme: 'bearer', bearerFormat: 'JWT', description: 'A token of POST /token (e-mail and password) or of POST /oauth/token.' },
        apiKey: { type: 'http' as const, scheme: 'bearer', bearerFormat: 'srk_ API key', description: 'An API key (POST /api-keys) as the bearer token: "Authorization: Bearer srk_…".' },
        metricsToken: { type: 'http' as const, scheme: 'bearer', description: 'GET /metrics: the operator\'s METRICS_TOKEN.' },
        basicAuth: { type: 'http' as const, scheme: 'basic', description: 'HTTP Basic with any user name and an API key (srk_…) as the password; never the account\'s password.' },
        oauth2: {
          type: 'oauth2' as const,
          description: 'OAuth2 client credentials: client_id is the API key\'s id, client_secret the key.',
          flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: { read: 'Read what the account may read', write: 'Everything the account may do' } } }
        }
      },
      responses: {
        NotFound: {
          description: 'No such path (any method).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error404' } } }
        },
        MethodNotAllowed: {
          description: 'The path is served, but not with this method.',
          headers: { Allow: { description: 'The methods the path is served with.', schema: { type: 'string' as const } } },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error405' } } }
        }
      }
    }
  },
  refResolver,
  transformObject: ((object) => 'openapiObject' in object
    ? withDollarProperties(withSeedPaths(object.openapiObject as Partial<OpenAPIV3.Document>)) as Partial<OpenAPIV3.Document>
    : object.swaggerObject) satisfies SwaggerTransformObject
}
