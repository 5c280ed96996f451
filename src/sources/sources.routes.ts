// POST /sources, GET /sources/?id=, DELETE /sources/?id= (with or without the trailing slash).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import { ApiError, type ErrorDetail, errorResponses, summarise } from '../errors.js'
import type { AuthenticatedAccount } from '../plugins/auth.js'
import { checkFeatureCollection } from './geojson.js'
import { newSourceIds } from './source-id.js'
import {
  CreateResponseSchema, DeleteResponseSchema, SourceFeatureSchema, SourceQuerySchema,
  featureCollectionSchema, type CreateResponse, type SourceFeature
} from './sources.schema.js'
import {
  type NewSource, type Scope, type SourceRow,
  deleteSource, diagnoseSources, sourceReader, sourceWriter
} from './sources.repository.js'

function scopeOf (account: AuthenticatedAccount): Scope {
  return account.role === 'admin' ? 'all' : { organisation: account.organisation }
}

// "…00.000000Z" → "…00Z"; keeps microseconds when there are any.
const trimMicros = (iso: string): string => iso.replace(/\.0{6}Z$/, 'Z').replace(/(\.\d*?)0+Z$/, '$1Z')

/**
 * The GeoJSON Feature of a row, as JSON text. The geometry is PostGIS's own ST_AsGeoJSON text,
 * spliced in as it is rather than parsed into objects and serialised again (SourceFeatureSchema
 * still documents the shape; the tests check it).
 */
function featureJson (row: SourceRow): string {
  const properties: SourceFeature['properties'] = {
    feature_id: row.feature_id,
    start_at: trimMicros(row.start_at),
    end_at: trimMicros(row.end_at),
    created_at: trimMicros(row.created_at),
    organisation: row.organisation,
    area_m2: row.area_m2
  }
  return `{"type":"Feature","id":${JSON.stringify(row.id)},"geometry":${row.geometry},"properties":${JSON.stringify(properties)}}`
}

const PG_CHECK_VIOLATION = '23514'
const PG_EXCLUSION_VIOLATION = '23P01'

/**
 * The INSERT was rejected by a constraint of `sources`: ask the database which features break
 * which rule, and turn that into a 409 (conflict) or 422 (invalid geometry or period) with a
 * pointer per feature. Any other error is returned unchanged for the error handler.
 */
async function explainRejection (app: Parameters<FastifyPluginAsyncTypebox>[0], err: unknown, organisation: string, sources: NewSource[]): Promise<unknown> {
  const { code, constraint } = err as { code?: string, constraint?: string }
  if ((code !== PG_CHECK_VIOLATION && code !== PG_EXCLUSION_VIOLATION) || constraint?.startsWith('sources_') !== true) return err
  const diagnoses = await diagnoseSources(app.db, organisation, sources)
  const featureIdOf = (i: number): string => sources[i]?.featureId as string

  if (code === PG_EXCLUSION_VIOLATION) {
    const details: ErrorDetail[] = diagnoses.filter((d) => d.existingId !== null).map((d) => ({
      pointer: `/features/${d.index}/id`,
      message: `feature id "${featureIdOf(d.index)}" is already registered for an overlapping period as ${d.existingId as string}`,
      feature_index: d.index,
      feature_id: featureIdOf(d.index),
      existing_id: d.existingId as string
    }))
    const first = details[0]
    return new ApiError('SOURCE_CONFLICT', first !== undefined
      ? `A source with this feature id and an overlapping period already exists: ${first.existing_id as string}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}.`
      : 'A source with this feature id and an overlapping period already exists.', { details })
  }

  const geometry: ErrorDetail[] = diagnoses.filter((d) => !d.valid).map((d) => ({
    pointer: d.ring === null ? `/features/${d.index}/geometry` : `/features/${d.index}/geometry/coordinates/${d.ring}`,
    message: `invalid polygon: ${d.reason ?? 'rejected by ST_IsValid'}${d.location ? ` at [${d.location.join(', ')}]` : ''}${d.ring === null ? '' : ` (ring ${d.ring})`}`,
    feature_index: d.index,
    feature_id: featureIdOf(d.index),
    ...(d.reason !== null ? { reason: d.reason } : {}),
    ...(d.location !== null ? { location: d.location } : {}),
    ...(d.ring !== null ? { ring: d.ring } : {})
  }))
  const period: ErrorDetail[] = diagnoses.filter((d) => !d.inWindow).map((d) => ({
    pointer: `/features/${d.index}/properties`,
    message: `the period must lie within the acceptable window [${d.windowStart}, ${d.windowEnd})`,
    feature_index: d.index,
    feature_id: featureIdOf(d.index)
  }))
  const details = [...geometry, ...period].slice(0, 100)
  if (details.length === 0) return err
  return new ApiError(geometry.length > 0 ? 'INVALID_GEOMETRY' : 'INVALID_PERIOD', summarise(details), { details })
}

const sourcesRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  // Reads and inserts batched under load (sources.repository.ts, db/batch.ts).
  const readSource = sourceReader(app.db, { maxInFlight: config.DB_READS_IN_FLIGHT, maxBatch: 100 })
  const writeSources = sourceWriter(app.db, { maxInFlight: config.DB_WRITES_IN_FLIGHT, maxFeatures: config.MAX_FEATURES })
  // RFC 7946's media type, parsed exactly like application/json (same limits, same poisoning checks).
  app.addContentTypeParser('application/geo+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  app.post('/sources', {
    config: { bodyValidationCode: 'INVALID_GEOJSON' },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    ...app.largeBodies,
    schema: {
      summary: 'Create sources from a GeoJSON FeatureCollection (all or nothing)',
      security: [{ bearerAuth: [] }],
      body: featureCollectionSchema(config.MAX_FEATURES),
      response: { 201: CreateResponseSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 422, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const checked = checkFeatureCollection(request.body)
    if (!checked.ok) throw new ApiError(checked.code, summarise(checked.details), { details: checked.details })
    const account = request.account
    const ids = newSourceIds(checked.features.length)
    const sources: NewSource[] = checked.features.map((f, i) => ({ id: ids[i] as string, featureId: f.featureId, rings: f.rings, startAt: f.startAt, endAt: f.endAt }))
    try {
      await writeSources({ owner: { organisation: account.organisation, accountId: account.id }, sources })
    } catch (err) {
      throw await explainRejection(app, err, account.organisation, sources)
    }
    const created = sources.map((s) => ({ id: s.id, feature_id: s.featureId }))
    const body: CreateResponse = created.length === 1
      ? { id: created[0]?.id, message: 'Source created.', sources: created }
      : { message: `${created.length} sources created.`, sources: created }
    if (created.length === 1) void reply.header('location', `/sources/?id=${created[0]?.id as string}`)
    return reply.code(201).send(body)
  })

  app.get('/sources', {
    onRequest: [app.authenticate],
    schema: {
      summary: 'Read one source as a GeoJSON Feature',
      security: [{ bearerAuth: [] }],
      querystring: SourceQuerySchema,
      response: { 200: SourceFeatureSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const row = await readSource(request.query.id, scopeOf(request.account))
    if (row === undefined) throw new ApiError('NOT_FOUND', `No source with id ${request.query.id}.`)
    // A string payload is sent as it is (no second serialisation); its shape is SourceFeature's.
    return reply.type('application/geo+json').send(featureJson(row) as unknown as SourceFeature)
  })

  app.delete('/sources', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      summary: 'Delete one source',
      security: [{ bearerAuth: [] }],
      querystring: SourceQuerySchema,
      response: { 200: DeleteResponseSchema, ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const deleted = await deleteSource(app.db, request.query.id, scopeOf(request.account))
    if (!deleted) throw new ApiError('NOT_FOUND', `No source with id ${request.query.id}.`)
    return { message: `Source ${request.query.id} deleted.` }
  })
}

export default sourcesRoutes
