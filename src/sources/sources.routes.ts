// POST /sources, GET, PUT, PATCH and DELETE /sources/?id=, GET /sources/versions?id= (with or
// without the trailing slash). One source's writes and reads are source-changes.ts's, and what
// is sent of one source-replies.ts's, shared with the OGC items paths.
// HTTP only: checks (geojson.ts), storage (a SourceStore, plain or fast, chosen in app.ts) and
// the explanation of a rejected write (rejections.ts) live beside it.
import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SourcesConfig } from '../config.js'
import { errorResponses } from '../errors.js'
import { MERGE_PATCH, mergePatchOnly } from '../http/merge-patch.js'
import { noBody, sentAs } from '../http/openapi.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { headerDoc } from '../schemas/primitives.js'
import { featureOf } from './rejections.js'
import { etagOf } from './source-feature.js'
import {
  ConflictKeysHeadersSchema, CreateQuerySchema, CreateResponseSchema, DeleteResponseSchema, DryRunResponseSchema, FeatureInputSchema, MergePatchSchema,
  SourceChangeQuerySchema, SourceQuerySchema, SourceReadQuerySchema, VersionsQuerySchema, featureCollectionSchema
} from './sources.schema.js'
import { SourceOrVersionSchema, VersionsResponseSchema } from './source-feature.schema.js'
import type { SourceStore } from './sources.store.js'
import type { AttributeSchemaStore } from './attribute-schemas.store.js'
import { createSources, patch, remove, replace, versionsPage } from './source-changes.js'
import { CHANGED, CHANGE_ERRORS, CONTENT_CRS_HEADER, ETAG_HEADER, actorOf, sendRead, sendSource, versionsOf, writeOptionsOf } from './source-replies.js'
import { type CrsCatalogue, crsHeader, outputOf } from './crs.js'

const sourcesRoutes: FastifyPluginAsyncTypebox<{ config: SourcesConfig, store: SourceStore, schemas: AttributeSchemaStore, catalogue: CrsCatalogue }> = async (app, { config, store, schemas, catalogue }) => {
  // RFC 7946's media type, parsed exactly like application/json (same limits, same poisoning checks).
  app.addContentTypeParser('application/geo+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

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
      headers: ConflictKeysHeadersSchema,
      body: featureCollectionSchema(config.MAX_FEATURES),
      response: {
        200: DryRunResponseSchema,
        201: { ...CreateResponseSchema, headers: { Location: headerDoc('When one source was created: /sources/?id=<its id>.'), ETag: headerDoc('When one source was created: W/"1", its first version.') } },
        ...errorResponses(400, 401, 403, 408, 409, 413, 415, 422, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { organisation, id: accountId } = request.account
    const created = await createSources(store, schemas, { organisation, accountId }, request.body, request.query, config.CONFLICT_POLICY, writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))
    if (created.status === 201 && created.body.id !== undefined) void reply.header('location', `/sources/?id=${created.body.id}`).header('etag', etagOf(1))
    return await reply.code(created.status).send(created.body)
  })

  app.get('/sources', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getSource',
      summary: 'Read one source as a GeoJSON Feature (with as_of, as the registry held it then)',
      security: SECURITY,
      querystring: SourceReadQuerySchema,
      response: {
        200: sentAs('application/geo+json', SourceOrVersionSchema, 'The source; with as_of, the version held then.', { ETag: ETAG_HEADER, 'Content-Crs': CONTENT_CRS_HEADER }),
        304: noBody('Not modified: If-None-Match names the current version.', { ETag: ETAG_HEADER }),
        ...errorResponses(400, 401, 404, 410, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    // A string is sent as it is; the typed reply wants the schema's object type, the plain
    // FastifyReply it extends takes any payload (the Feature text).
    const untyped: FastifyReply = reply
    return await sendRead(store, request, untyped, request.query.id, request.query.as_of, catalogue.read(request.query.crs))
  })

  app.get('/sources/versions', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getSourceVersions',
      summary: 'Every version of one source, newest first (deleted sources too)',
      security: SECURITY,
      querystring: VersionsQuerySchema,
      response: { 200: VersionsResponseSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const self = new URL(request.url, `${request.protocol}://${request.host}`)
    const crs = catalogue.read(request.query.crs)
    if (crs !== undefined) void reply.header('content-crs', crsHeader(crs))
    return await versionsPage(store, request.account.scope, request.query.id, self, Number(request.query.limit ?? 100), request.query.cursor, crs === undefined ? undefined : { crs: outputOf(crs) })
  })

  app.put('/sources', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', mediaTypes: ['application/json', 'application/geo+json'] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'replaceSource',
      summary: 'Replace one source with a GeoJSON Feature (If-Match required)',
      security: WRITE_SECURITY,
      consumes: ['application/json', 'application/geo+json'],
      querystring: SourceChangeQuerySchema,
      headers: ConflictKeysHeadersSchema,
      body: FeatureInputSchema,
      response: { 200: CHANGED, ...errorResponses(...CHANGE_ERRORS) }
    }
  }, async (request, reply) => sendSource(reply as FastifyReply, await replace(store, schemas, actorOf(request), request.query.id, versionsOf(request, true), request.body, request.query.id_property,
    writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))))

  app.patch('/sources', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', mediaTypes: [MERGE_PATCH] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor'), mergePatchOnly],
    schema: {
      operationId: 'updateSource',
      summary: 'Change one source with a JSON merge patch (RFC 7396; If-Match required)',
      security: WRITE_SECURITY,
      consumes: [MERGE_PATCH],
      querystring: SourceChangeQuerySchema,
      headers: ConflictKeysHeadersSchema,
      body: MergePatchSchema,
      response: { 200: CHANGED, ...errorResponses(...CHANGE_ERRORS) }
    }
  }, async (request, reply) => sendSource(reply as FastifyReply, await patch(store, schemas, actorOf(request), request.query.id, versionsOf(request, true), request.body,
    writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))))

  app.delete('/sources', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'deleteSource',
      summary: 'Delete one source (If-Match honoured when sent); its versions stay readable',
      security: WRITE_SECURITY,
      querystring: SourceQuerySchema,
      // A DELETE's body is read (and ignored) like a POST's, so it can be too large, of an unread type, or late.
      response: { 200: DeleteResponseSchema, ...errorResponses(400, 401, 403, 404, 408, 410, 412, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    await remove(store, actorOf(request), request.query.id, versionsOf(request, false))
    return { message: `Source ${request.query.id} deleted.` }
  })
}

export default sourcesRoutes
