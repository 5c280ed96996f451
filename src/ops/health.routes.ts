// GET /health (the process is up) and GET /ready (the database answers), unauthenticated and
// not rate limited, for load balancers and orchestrators.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ApiError, errorResponses } from '../errors.js'
import type { HealthStore } from './health.store.js'

const StatusSchema = Type.Object({ status: Type.Literal('ok') }, { description: 'Up.' })

const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthStore }> = async (app, { health }) => {
  app.get('/health', {
    config: { rateLimit: false },
    schema: { operationId: 'getHealth', summary: 'Liveness', security: [], response: { 200: StatusSchema, ...errorResponses(500) } }
  }, async () => ({ status: 'ok' as const }))

  app.get('/ready', {
    config: { rateLimit: false },
    schema: { operationId: 'getReadiness', summary: 'Readiness: the database answers', security: [], response: { 200: StatusSchema, ...errorResponses(500, 503) } }
  }, async (request) => {
    try {
      await health.ping()
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      throw new ApiError('SERVICE_UNAVAILABLE', 'The database is not reachable.', { headers: { 'retry-after': '5' } })
    }
    return { status: 'ok' as const }
  })
}

export default healthRoutes
