// GET /openapi.json: the OpenAPI document @fastify/swagger makes from every route's schema
// (options in openapi.ts), served as OGC API – Features' service-desc.
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
  }, async (_request, reply) => reply.type(OPENAPI_MEDIA_TYPE).send(app.swagger()))
}

export default openApiRoutes
