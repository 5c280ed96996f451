// GET /health (the process is up) and GET /ready (the database answers), unauthenticated and
// not rate limited, for load balancers and orchestrators. With read replicas /ready also lists
// each one's state and lag; a replica down or lagging does not make the service unready (its
// reads go to the primary).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ApiError, errorResponses } from '../errors.js'
import type { HealthStore } from './health.store.js'
import type { ReplicaState } from './replicas.js'

const StatusSchema = Type.Object({ status: Type.Literal('ok') }, { description: 'Up.' })

const ReadySchema = Type.Object({
  status: Type.Literal('ok'),
  replicas: Type.Optional(Type.Array(Type.Object({
    name: Type.String({ description: 'replica-N: the Nth URL of DATABASE_REPLICA_URLS.' }),
    state: Type.Union([Type.Literal('healthy'), Type.Literal('lagging'), Type.Literal('down')], { description: 'healthy: reads go to it; lagging (behind by more than REPLICA_MAX_LAG_MS) or down: skipped until it recovers.' }),
    lag_ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'How far its replay was behind the primary at its last check; null when it did not answer.' })
  }), { description: 'With DATABASE_REPLICA_URLS: each read replica as of its last check.' }))
})

const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthStore, replicas?: () => ReplicaState[] }> = async (app, { health, replicas }) => {
  app.get('/health', {
    config: { rateLimit: false },
    schema: { operationId: 'getHealth', summary: 'Liveness', security: [], response: { 200: StatusSchema, ...errorResponses(500) } }
  }, async () => ({ status: 'ok' as const }))

  app.get('/ready', {
    config: { rateLimit: false },
    schema: { operationId: 'getReadiness', summary: 'Readiness: the database answers', security: [], response: { 200: ReadySchema, ...errorResponses(500, 503) } }
  }, async (request) => {
    try {
      await health.ping()
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      throw new ApiError('SERVICE_UNAVAILABLE', 'The database is not reachable.', { headers: { 'retry-after': '5' } })
    }
    return replicas === undefined ? { status: 'ok' as const } : { status: 'ok' as const, replicas: replicas() }
  })
}

export default healthRoutes
