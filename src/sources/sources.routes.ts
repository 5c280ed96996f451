// POST /sources, GET /sources/?id=, DELETE /sources/?id= (with or without the trailing slash).
// HTTP only: checks (geojson.ts), storage (a SourceStore, plain or fast, chosen in app.ts) and
// the explanation of a rejected write (rejections.ts) live beside it.
import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import { ApiError, errorResponses, summarise } from '../errors.js'
import { headerDoc, sentAs } from '../http/openapi.js'
import { SECURITY, WRITE_SECURITY } from '../plugins/auth.js'
import { checkFeatureCollection } from './geojson.js'
import { conflictIds, featureConflicts, overlapRejection } from './conflicts.js'
import { featureOf, explainRejection } from './rejections.js'
import { newSourceIds } from './source-id.js'
import {
  CreateQuerySchema, CreateResponseSchema, DeleteResponseSchema, DryRunResponseSchema, SourceFeatureSchema, SourceQuerySchema,
  featureCollectionSchema, type CreateResponse, type DryRunResponse
} from './sources.schema.js'
import type { ConflictsById, NewSource } from './sources.repository.js'
import { featureJson } from './source-feature.js'
import type { SourceStore } from './sources.store.js'

const sourcesRoutes: FastifyPluginAsyncTypebox<{ config: Config, store: SourceStore }> = async (app, { config, store }) => {
  // RFC 7946's media type, parsed exactly like application/json (same limits, same poisoning checks).
  app.addContentTypeParser('application/geo+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  app.post('/sources', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', describeBodyPointer: featureOf, mediaTypes: ['application/json', 'application/geo+json'] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    ...app.largeBodies,
    schema: {
      operationId: 'createSources',
      summary: 'Create sources from a GeoJSON FeatureCollection (all or nothing); report, or with on_conflict=reject refuse, conflicts with registered sources',
      security: WRITE_SECURITY,
      consumes: ['application/json', 'application/geo+json'],
      querystring: CreateQuerySchema,
      body: featureCollectionSchema(config.MAX_FEATURES),
      response: {
        200: DryRunResponseSchema,
        201: { ...CreateResponseSchema, headers: { Location: headerDoc('When one source was created: /sources/?id=<its id>.') } },
        ...errorResponses(400, 401, 403, 408, 409, 413, 415, 422, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const checked = checkFeatureCollection(request.body)
    if (!checked.ok) throw new ApiError(checked.code, summarise(checked.details), { details: checked.details })
    const account = request.account
    const ids = newSourceIds(checked.features.length)
    const sources: NewSource[] = checked.features.map((f, i) => ({ ...f, id: ids[i] as string }))
    const insert = { owner: { organisation: account.organisation, accountId: account.id }, sources }
    const dryRun = request.query.dry_run === 'true'
    const reject = (request.query.on_conflict ?? config.CONFLICT_POLICY) === 'reject'
    let conflicts: ConflictsById
    try {
      if (dryRun || reject) {
        // In a transaction that commits only a real write without conflicts: dry runs and
        // rejected writes roll back, and what they read is what a commit would have recorded.
        const outcome = await store.insertIf(insert, (found) => !dryRun && found.size === 0)
        if (reject && outcome.conflicts.size > 0) throw overlapRejection(outcome.conflicts, sources)
        conflicts = outcome.conflicts
      } else {
        conflicts = await store.insert(insert)
      }
    } catch (err) {
      if (err instanceof ApiError) throw err
      throw await explainRejection(err, sources, (s) => store.diagnose(account.organisation, s))
    }
    if (dryRun) {
      const each = featureConflicts(conflicts, sources)
      const body: DryRunResponse = {
        message: `Dry run, nothing was stored: ${sources.length} source${sources.length > 1 ? 's' : ''} would be created, ${each.filter((f) => f.conflict).length} with conflicts.`,
        dry_run: true,
        sources: each
      }
      return await reply.code(200).send(body)
    }
    const created = sources.map((s) => ({ id: s.id, feature_id: s.featureId, ...conflictIds(conflicts, s.id) }))
    const body: CreateResponse = created.length === 1
      ? { id: created[0]?.id, message: 'Source created.', sources: created }
      : { message: `${created.length} sources created.`, sources: created }
    if (created.length === 1) void reply.header('location', `/sources/?id=${created[0]?.id as string}`)
    return reply.code(201).send(body)
  })

  app.get('/sources', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getSource',
      summary: 'Read one source as a GeoJSON Feature',
      security: SECURITY,
      querystring: SourceQuerySchema,
      response: { 200: sentAs('application/geo+json', SourceFeatureSchema, 'The source.'), ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const row = await store.find(request.query.id, request.account.scope)
    if (row === undefined) throw new ApiError('NOT_FOUND', `No source with id ${request.query.id}.`)
    // A string is sent as it is; the typed reply wants the schema's object type, the plain
    // FastifyReply it extends takes any payload (featureJson above).
    const untyped: FastifyReply = reply
    return untyped.type('application/geo+json').send(featureJson(row))
  })

  app.delete('/sources', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'deleteSource',
      summary: 'Delete one source',
      security: WRITE_SECURITY,
      querystring: SourceQuerySchema,
      // A DELETE's body is read (and ignored) like a POST's, so it can be too large, of an unread type, or late.
      response: { 200: DeleteResponseSchema, ...errorResponses(400, 401, 403, 404, 408, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    if (!await store.delete(request.query.id, request.account.scope)) throw new ApiError('NOT_FOUND', `No source with id ${request.query.id}.`)
    return { message: `Source ${request.query.id} deleted.` }
  })
}

export default sourcesRoutes
