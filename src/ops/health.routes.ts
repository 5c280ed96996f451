// GET /health (the process is up) and GET /ready (the database answers), unauthenticated and
// not rate limited, for load balancers and orchestrators. With read replicas /ready also lists
// each one's state and lag; a replica down or lagging does not make the service unready (its
// reads go to the primary). On a PostGIS server it says which host is the primary (several hosts in
// DATABASE_URL), the failovers this instance saw, and the standbys streaming from the primary.
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
  }), { description: 'With DATABASE_REPLICA_URLS: each read replica as of its last check.' })),
  database: Type.Optional(Type.Object({
    primary: Type.Union([Type.String(), Type.Null()], { description: 'With a DATABASE_URL of several hosts: the host (host:port) writes go to now; null with one host.' }),
    failovers: Type.Integer({ minimum: 0, description: 'Times the primary moved to another host since this instance started.' }),
    standbys: Type.Array(Type.Object({
      name: Type.String({ description: 'The standby\'s application_name (Patroni: its member name).' }),
      state: Type.Union([Type.String(), Type.Null()], { description: 'pg_stat_replication.state: streaming, catchup, …; null without the pg_monitor role.' }),
      sync_state: Type.Union([Type.String(), Type.Null()], { description: 'sync (a commit waits for it), potential, quorum or async; null without the pg_monitor role.' }),
      replay_lag_ms: Type.Union([Type.Integer(), Type.Null()], { description: 'How long its replay of recent commits took; null when idle.' })
    }), { description: 'The standbys streaming from the primary (pg_stat_replication).' })
  }, { description: 'A PostGIS server: the primary and its replication.' }))
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
    const database = await health.database().catch((err: unknown) => {
      request.log.warn({ err }, 'readiness: reading the replication state failed')
      return undefined
    })
    return { status: 'ok' as const, ...(replicas === undefined ? {} : { replicas: replicas() }), ...(database === undefined ? {} : { database }) }
  })
}

export default healthRoutes
