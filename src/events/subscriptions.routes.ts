// POST /subscriptions (a webhook, its signing secret shown once), GET /subscriptions,
// DELETE /subscriptions/?id=, GET /subscriptions/deliveries?id= (recent attempts). Editors and
// admins make and delete them; anyone of the organisation may list them. The URL is checked
// against SSRF here (webhook-address.ts) and again at every delivery.
import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { EventsConfig } from '../config.js'
import { ApiError, errorResponses } from '../errors.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { newSourceIds } from '../sources/source-id.js'
import type { SubscriptionRow } from './events.repository.js'
import {
  CreateSubscriptionSchema, CreatedSubscriptionSchema, DeletedSchema, DeliveriesSchema, ListSubscriptionsQuerySchema,
  type SubscriptionView, SubscriptionListSchema, SubscriptionQuerySchema
} from './events.schema.js'
import type { EventStore } from './events.store.js'
import { ALLOW_PRIVATE_HINT, RefusedUrl, checkWebhookUrl } from './webhook-address.js'

const TAGS = ['Webhooks']

function utc (d: Date): string {
  return d.toISOString().replace(/\.?0+Z$/, 'Z')
}

function view (row: SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    url: row.url,
    types: row.types as SubscriptionView['types'],
    organisation: row.organisation,
    status: row.status,
    failures: row.failures,
    ...(row.failing_since !== null ? { failing_since: utc(row.failing_since) } : {}),
    next_attempt_at: utc(row.next_attempt_at),
    created_at: utc(row.created_at)
  }
}

/** The organisation whose subscriptions a caller manages: its own; an admin's choice, or all. */
function scopeOf (request: FastifyRequest): string | undefined {
  return request.account.scope === 'all' ? undefined : request.account.organisation
}

const subscriptionsRoutes: FastifyPluginAsyncTypebox<{ config: EventsConfig, store: EventStore }> = async (app, { config, store }) => {
  app.post('/subscriptions', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'createSubscription',
      summary: 'Subscribe a URL to events (webhooks); the signing secret is shown once',
      description: 'Events are POSTed as CloudEvents with Standard Webhooks signatures, in order, at least once. The URL must be https and must not resolve to a loopback, private, link-local or metadata address, unless the operator set WEBHOOK_ALLOW_PRIVATE=true (development and tests only).',
      tags: TAGS,
      security: WRITE_SECURITY,
      body: CreateSubscriptionSchema,
      response: { 201: CreatedSubscriptionSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { url, types, organisation: asked } = request.body
    const { account } = request
    if (asked !== undefined && account.scope !== 'all' && asked !== account.organisation) {
      throw new ApiError('FORBIDDEN', 'Only admins may subscribe to another organisation\'s events.')
    }
    try {
      await checkWebhookUrl(url, config.WEBHOOK_ALLOW_PRIVATE)
    } catch (err) {
      if (!(err instanceof RefusedUrl)) throw err
      throw new ApiError('WEBHOOK_URL_REFUSED', `The webhook URL ${err.message}.${err.allowable ? ` ${ALLOW_PRIVATE_HINT}.` : ''}`, { details: [{ pointer: '/url', message: err.message }] })
    }
    const organisation = account.scope === 'all' ? asked ?? null : account.organisation
    // The id's 22 random base62 characters are made as a source id's are.
    const id = `sub_${(newSourceIds(1)[0] as string).slice(4)}`
    const secret = `whsec_${randomBytes(32).toString('base64')}`
    const row = await store.createSubscription({ id, organisation, createdBy: account.id, url, types, secret }, config.WEBHOOK_MAX_PER_ORG)
    if (row === undefined) {
      throw new ApiError('SUBSCRIPTION_LIMIT', `${organisation ?? 'Admins'} already hold${organisation === null ? '' : 's'} ${config.WEBHOOK_MAX_PER_ORG} subscriptions: delete one first (DELETE /subscriptions/?id=).`)
    }
    request.log.info({ subscription: id, organisation, by: account.id, types }, 'webhook subscription created')
    void reply.code(201).header('cache-control', 'no-store')
    return { ...view(row), secret, message: 'Subscription created. Copy the secret now: it is not shown again.' }
  })

  app.get('/subscriptions', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listSubscriptions',
      summary: 'List your organisation\'s webhook subscriptions (admins: every organisation\'s)',
      tags: TAGS,
      security: SECURITY,
      querystring: ListSubscriptionsQuerySchema,
      response: { 200: SubscriptionListSchema, ...errorResponses(400, 401, 403, 429, 500, 503) }
    }
  }, async (request) => {
    const asked = request.query.organisation
    const scope = scopeOf(request)
    if (asked !== undefined && scope !== undefined && asked !== scope) throw new ApiError('FORBIDDEN', 'Only admins may list another organisation\'s subscriptions.')
    return { subscriptions: (await store.listSubscriptions(asked ?? scope)).map(view) }
  })

  app.delete('/subscriptions', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'deleteSubscription',
      summary: 'Delete a webhook subscription: nothing more is sent to it',
      tags: TAGS,
      security: WRITE_SECURITY,
      querystring: SubscriptionQuerySchema,
      response: { 200: DeletedSchema, ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const { id } = request.query
    if (!await store.deleteSubscription(id, scopeOf(request))) throw new ApiError('NOT_FOUND', `No subscription ${id} in your scope.`)
    request.log.info({ subscription: id, by: request.account.id }, 'webhook subscription deleted')
    return { message: `Subscription ${id} deleted.` }
  })

  app.get('/subscriptions/deliveries', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listDeliveries',
      summary: 'Recent delivery attempts of a subscription: status, latency, error',
      tags: TAGS,
      security: SECURITY,
      querystring: SubscriptionQuerySchema,
      response: { 200: DeliveriesSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const { id } = request.query
    if (await store.findSubscription(id, scopeOf(request)) === undefined) throw new ApiError('NOT_FOUND', `No subscription ${id} in your scope.`)
    const rows = await store.deliveries(id, 100)
    return {
      deliveries: rows.map((r) => ({
        event_id: r.event_id,
        attempted_at: utc(r.attempted_at),
        ...(r.status_code !== null ? { status_code: r.status_code } : {}),
        latency_ms: r.latency_ms,
        ...(r.error !== null ? { error: r.error } : {})
      }))
    }
  })
}

export default subscriptionsRoutes
