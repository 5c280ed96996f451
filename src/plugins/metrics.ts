// The `metrics` decorator (ops/metrics.ts) and, when metrics are on (METRICS_TOKEN or
// METRICS_PORT), the hooks that time every request, and GET /metrics on the service's port for
// requests bearing METRICS_TOKEN. Off by default: without either variable nothing is timed and
// /metrics is a 404 saying how to turn them on. In the OpenAPI document only when it is served on
// the service's port.
import { createHash, timingSafeEqual } from 'node:crypto'
import fp from 'fastify-plugin'
import type { OpsConfig } from '../config.js'
import { Type } from '@sinclair/typebox'
import { ApiError, errorResponses } from '../errors.js'
import { sentAs } from '../http/openapi.js'
import { type Metrics, UNMATCHED, methodLabel } from '../ops/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()
const bearerOf = (header: string | undefined): string | undefined => header === undefined ? undefined : /^\s*Bearer\s+(\S+)\s*$/i.exec(header)?.[1]

export default fp<{ config: OpsConfig, metrics: Metrics }>(async (app, { config, metrics }) => {
  app.decorate('metrics', metrics)
  if (config.METRICS_TOKEN === undefined) {
    // Not an operation of this port (hidden, any method): the 404 of an unknown path, saying how to turn it on.
    const where = config.METRICS_PORT === undefined
      ? 'Metrics are off: an operator turns them on with METRICS_TOKEN (GET /metrics here, with "Authorization: Bearer <METRICS_TOKEN>") or METRICS_PORT (GET /metrics on a port of its own); see docs/operations.md#metrics.'
      : `Metrics are served on their own port (METRICS_PORT=${config.METRICS_PORT}), not here; an operator serves them here too with METRICS_TOKEN; see docs/operations.md#metrics.`
    app.all('/metrics', { config: { rateLimit: false }, schema: { hide: true, response: errorResponses(404) } }, async () => {
      throw new ApiError('NOT_FOUND', where)
    })
  }
  if (config.METRICS_TOKEN === undefined && config.METRICS_PORT === undefined) return

  app.addHook('onResponse', async (request, reply) => {
    const labels = { route: request.routeOptions.url ?? UNMATCHED, method: methodLabel(request.method), status: String(reply.statusCode) }
    metrics.requests.inc(labels)
    metrics.duration.observe(labels, reply.elapsedTime / 1000)
  })

  if (config.METRICS_TOKEN === undefined) return
  const expected = digest(config.METRICS_TOKEN)
  app.get('/metrics', {
    config: { rateLimit: false },
    schema: {
      operationId: 'getMetrics',
      summary: 'Prometheus metrics (Authorization: Bearer <METRICS_TOKEN>)',
      tags: ['Operations'],
      security: [{ metricsToken: [] }],
      response: {
        200: sentAs('text/plain', Type.String(), 'The Prometheus text exposition format (version 0.0.4).'),
        ...errorResponses(401, 500)
      }
    }
  }, async (request, reply) => {
    const token = bearerOf(request.headers.authorization)
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      throw new ApiError('UNAUTHORIZED', 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>".', { headers: { 'www-authenticate': 'Bearer realm="metrics"' } })
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
}, { name: 'metrics', fastify: '5.x' })
