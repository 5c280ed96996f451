// GET /openapi.json: the OpenAPI document @fastify/swagger makes from every route's schema
// (options in openapi.ts), served as OGC API – Features' service-desc. It is sent as bytes with
// its media type exactly as declared: given an object or a string, Fastify re-serialises a custom
// Content-Type as `…; version="3.0"; charset=utf-8`, and GDAL's OAPIF driver, which compares the
// parameters token by token, then rejects the document ("Unexpected Content-Type") and stops
// sending -where's equalities as query parameters.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses } from '../errors.js'
import { OPENAPI_MEDIA_TYPE, sentAs } from './openapi.js'

const openApiRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/openapi.json', {
    config: { rateLimit: false },
    schema: {
      operationId: 'getOpenApi',
      summary: 'This OpenAPI definition',
      security: [],
      response: {
        200: sentAs(OPENAPI_MEDIA_TYPE, Type.Unsafe<ReturnType<typeof app.swagger>>(Type.Object({ openapi: Type.String(), info: Type.Object({}), paths: Type.Object({}) })), 'The OpenAPI 3.0 definition of this service.'),
        ...errorResponses(500)
      }
    }
  }, async (_request, reply) => {
    const bytes = Buffer.from(JSON.stringify(app.swagger()))
    // The document's bytes, which the 200's schema describes once parsed.
    return await reply.header('content-type', OPENAPI_MEDIA_TYPE).send(bytes as unknown as ReturnType<typeof app.swagger>)
  })
}

export default openApiRoutes
