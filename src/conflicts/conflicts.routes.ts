// Conflicts as a resource: GET /conflicts (a page, filtered by state, period, bbox and source),
// GET /conflicts/{id} (with its ETag), POST /conflicts/{id}/stance (If-Match), the thread of
// notes (GET and POST /conflicts/{id}/notes) and the history of stances
// (GET /conflicts/{id}/history); the same conflicts as an OGC collection
// (/collections/conflicts/items); and the carve-out of a source (POST /sources/carve?id=,
// /collections/sources/items/{id}/carve). A caller sees the conflicts its organisation is a party to
// (admins: all); a third organisation gets 404. Of the other party's source: its id, its stance
// and the overlap, nothing else.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ApiError, type ErrorDetail, errorResponses } from '../errors.js'
import { noBody, sentAs } from '../http/openapi.js'
import { ifMatch, notModified } from '../http/preconditions.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { headerDoc } from '../schemas/primitives.js'
import { parseDatetimeParameter } from '../sources/datetime.js'
import type { ConflictListInput, ConflictParties } from './conflicts.repository.js'
import {
  CarveBodySchema, CarveDryRunSchema, CarveItemParamsSchema, CarveQuerySchema, CarveSourceQuerySchema,
  ConflictListQuerySchema, type ConflictListQuery, ConflictPageSchema, ConflictParamsSchema, ConflictSchema, HistorySchema, NoteBodySchema, NoteSchema,
  NotesSchema, StanceBodySchema, type StanceBody, CONFLICT_QUERYABLES_DOCUMENT, ConflictQueryablesSchema, ConflictsCollectionSchema
} from './conflicts.schema.js'
import type { ConflictStore } from './conflicts.store.js'
import { missing } from '../sources/source-changes.js'
import { ETAG_HEADER, sendSource } from '../sources/source-replies.js'
import { SourceFeatureSchema } from '../sources/source-feature.schema.js'
import type { SourceStore } from '../sources/sources.store.js'
import type { Scope } from '../db/database.js'
import type { FilterExpr } from '../sources/filter.sql.js'
import { CRS84 } from '../sources/crs.js'
import { conflictsCollection } from './conflicts.collection.js'

const TAGS = ['Conflicts']
const GEOJSON = 'application/geo+json'
const ETAG = headerDoc('W/"<version>": the version of the conflict (If-Match and If-None-Match take it).')
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

const etagOf = (version: number): string => `W/"${version}"`


/**
 * A CQL2 filter checked over CONFLICT_QUERYABLES into a FilterExpr (app.ts hands over the
 * checker of features/filters/cql2.ts, a layer above this one), or the message saying why not.
 */
export type ConflictFilterCheck = (filter: string, lang: 'cql2-text' | 'cql2-json') => { expr: FilterExpr, geometries: string[] } | { error: string }

/** The query of a listing as the repository takes it, and the filter's WKT to validate; 400 with a pointer per bad value. */
function listInput (request: FastifyRequest, q: ConflictListQuery, check: ConflictFilterCheck): { input: ConflictListInput, geometries: string[] } {
  const details: ErrorDetail[] = []
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit)
  if (!(limit >= 1 && limit <= MAX_LIMIT)) details.push({ pointer: '?limit', message: `must be 1 to ${MAX_LIMIT}` })
  let bbox: ConflictListInput['bbox']
  if (q.bbox !== undefined) {
    const n = q.bbox.split(',').map((v) => (v.trim() === '' ? NaN : Number(v)))
    const [w, s, e, nn] = n as [number, number, number, number]
    if (n.length !== 4 || n.some((v) => !Number.isFinite(v))) details.push({ pointer: '?bbox', message: 'must be four numbers: minLon,minLat,maxLon,maxLat' })
    else if (w < -180 || e > 180 || s < -90 || nn > 90 || w > e || s > nn) details.push({ pointer: '?bbox', message: 'must lie within -180,-90,180,90 with min ≤ max (a box across the antimeridian: ask for each side)' })
    else bbox = [w, s, e, nn]
  }
  const period = q.datetime === undefined ? undefined : parseDatetimeParameter(q.datetime, details)
  if (q['filter-crs'] !== undefined && q['filter-crs'] !== CRS84) details.push({ pointer: '?filter-crs', message: `must be ${CRS84}: the filter's geometries are longitude, latitude in CRS84` })
  let filter: { expr: FilterExpr, geometries: string[] } | undefined
  if (q.filter !== undefined) {
    const checked = check(q.filter, q['filter-lang'] ?? 'cql2-text')
    if ('error' in checked) details.push({ pointer: '?filter', message: checked.error })
    else filter = checked
  }
  if (details.length > 0) throw new ApiError('VALIDATION_FAILED', `${details[0]?.pointer} ${details[0]?.message}`, { details })
  const { scope, organisation } = request.account
  const input: ConflictListInput = {
    scope,
    organisation,
    state: q.state,
    limit,
    ...(q.source_id !== undefined ? { sourceId: q.source_id } : {}),
    ...(bbox !== undefined ? { bbox } : {}),
    ...(period?.at !== undefined ? { from: period.at, to: period.at } : {}),
    ...(period?.from !== undefined ? { from: period.from } : {}),
    ...(period?.to !== undefined ? { to: period.to } : {}),
    ...(q.cursor !== undefined ? { after: q.cursor } : {}),
    ...(filter !== undefined ? { filter: filter.expr } : {})
  }
  return { input, geometries: filter?.geometries ?? [] }
}

const notFound = (id: string): ApiError => new ApiError('NOT_FOUND', `No conflict ${id} that your organisation is a party to.`)

/**
 * Which party's stance the caller sets: the one named by source_id (its organisation's, unless an
 * admin acts), else the caller's organisation's side when it holds exactly one. The stance
 * UPDATE decides the same in SQL (conflicts.repository.ts updateStanceQuery); this one runs only
 * to say why that UPDATE stored nothing, so the two must agree (test/conflicts/states.test.ts).
 */
function sideOf (request: FastifyRequest, c: ConflictParties, named: string | undefined): 'a' | 'b' {
  const { organisation, scope } = request.account
  const admin = scope === 'all'
  if (named !== undefined) {
    const side = named === c.sourceA ? 'a' : named === c.sourceB ? 'b' : undefined
    if (side === undefined) throw new ApiError('VALIDATION_FAILED', `source_id ${named} is not a party to conflict ${c.id}: name ${c.sourceA} or ${c.sourceB}.`, { details: [{ pointer: '/source_id', message: 'is not a party to this conflict' }] })
    if (!admin && (side === 'a' ? c.organisationA : c.organisationB) !== organisation) throw new ApiError('FORBIDDEN', `Source ${named} is the other party's: only its organisation (or an admin) sets its stance.`)
    return side
  }
  const mineA = c.organisationA === organisation
  const mineB = c.organisationB === organisation
  if (mineA !== mineB) return mineA ? 'a' : 'b'
  throw new ApiError('VALIDATION_FAILED', admin && !mineA
    ? `Name the party you act for: source_id ${c.sourceA} or ${c.sourceB}.`
    : `Your organisation holds both sources of conflict ${c.id}: name the party, source_id ${c.sourceA} or ${c.sourceB}.`,
  { details: [{ pointer: '/source_id', message: 'is required here' }] })
}

const conflictsRoutes: FastifyPluginAsyncTypebox<{ store: ConflictStore, sources: SourceStore, checkFilter: ConflictFilterCheck }> = async (app, { store, sources, checkFilter }) => {
  const listResponses = {
    200: sentAs(GEOJSON, ConflictPageSchema, 'A page of conflicts your organisation is a party to (admins: all), in id order.'),
    ...errorResponses(400, 401, 429, 500, 503)
  }
  async function sendList (request: FastifyRequest, reply: FastifyReply, q: ConflictListQuery, path: string): Promise<FastifyReply> {
    const { input, geometries } = listInput(request, q, checkFilter)
    if (geometries.length > 0) {
      const details = (await store.geometryProblems(geometries)).flatMap((reason, i) => reason === null ? [] : [{ pointer: '?filter', message: `geometry literal ${i + 1} (a line or polygon) is not valid: ${reason}` }])
      if (details.length > 0) throw new ApiError('VALIDATION_FAILED', `${details[0]?.pointer} ${details[0]?.message}`, { details })
    }
    const rows = await store.list(input)
    const page = rows.slice(0, input.limit)
    const self = new URL(request.url, `${request.protocol}://${request.host}`)
    const links = [{ href: self.toString(), rel: 'self', type: GEOJSON }]
    if (rows.length > input.limit) {
      const next = new URL(path, self)
      for (const [k, v] of self.searchParams) if (k !== 'cursor') next.searchParams.set(k, v)
      next.searchParams.set('cursor', page[page.length - 1]?.id as string)
      links.push({ href: next.toString(), rel: 'next', type: GEOJSON })
    }
    return reply.type(GEOJSON).send(`{"type":"FeatureCollection","features":[${page.map((r) => r.feature).join(',')}],"numberReturned":${page.length},"links":${JSON.stringify(links)}}`)
  }

  app.get('/conflicts', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listConflicts',
      summary: 'The conflicts of your sources (admins: all): unresolved unless state= says otherwise',
      tags: TAGS,
      security: SECURITY,
      querystring: ConflictListQuerySchema,
      response: listResponses
    }
  }, async (request, reply) => await sendList(request, reply as FastifyReply, request.query, '/conflicts'))

  app.get('/collections/conflicts', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'describeConflictsCollection', summary: 'The conflicts collection', tags: TAGS, security: SECURITY,
      response: { 200: sentAs('application/json', ConflictsCollectionSchema, 'The collection.'), ...errorResponses(401, 429, 500, 503) }
    }
  }, async (request) => conflictsCollection(`${request.protocol}://${request.host}`))

  app.get('/collections/conflicts/queryables', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getConflictQueryables', summary: 'What a CQL2 filter on the conflicts may name (JSON Schema)', tags: TAGS, security: SECURITY,
      response: { 200: { content: { 'application/schema+json': { schema: ConflictQueryablesSchema } } }, ...errorResponses(401, 429, 500, 503) }
    }
  }, async (request, reply) => await (reply as FastifyReply).type('application/schema+json').send(JSON.stringify({
    $schema: 'https://json-schema.org/draft/2020-12/schema', $id: `${request.protocol}://${request.host}/collections/conflicts/queryables`, ...CONFLICT_QUERYABLES_DOCUMENT
  })))

  app.get('/collections/conflicts/items', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getConflictItems',
      summary: 'The conflicts as OGC API – Features items (the same as GET /conflicts)',
      tags: TAGS,
      security: SECURITY,
      querystring: ConflictListQuerySchema,
      response: listResponses
    }
  }, async (request, reply) => await sendList(request, reply as FastifyReply, request.query, '/collections/conflicts/items'))

  const oneResponses = {
    200: sentAs(GEOJSON, ConflictSchema, 'The conflict.', { ETag: ETAG }),
    304: noBody('Not modified: If-None-Match names the current version.', { ETag: ETAG }),
    ...errorResponses(400, 401, 404, 429, 500, 503)
  }
  async function sendOne (request: FastifyRequest, reply: FastifyReply, id: string): Promise<FastifyReply> {
    const row = await store.find(id, request.account.scope, request.account.organisation)
    if (row === undefined) throw notFound(id)
    void reply.header('etag', etagOf(row.version))
    if (notModified(request.headers['if-none-match'], row.version)) return reply.code(304).send()
    return reply.type(GEOJSON).send(row.feature)
  }

  app.get('/conflicts/:id', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getConflict', summary: 'One conflict your organisation is a party to (admins: any)', tags: TAGS, security: SECURITY, params: ConflictParamsSchema, response: oneResponses }
  }, async (request, reply) => await sendOne(request, reply as FastifyReply, request.params.id))

  app.get('/collections/conflicts/items/:id', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getConflictItem', summary: 'One conflict as an OGC API – Features item', tags: TAGS, security: SECURITY, params: ConflictParamsSchema, response: oneResponses }
  }, async (request, reply) => await sendOne(request, reply as FastifyReply, request.params.id))

  app.post('/conflicts/:id/stance', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'setConflictStance',
      summary: 'Set your party\'s stance on a conflict (If-Match required)',
      description: 'open → acknowledged → disputed (with a reason) or accepted; disputed and accepted may go back to acknowledged or to each other. A change the table does not allow is 409 STANCE_NOT_ALLOWED naming the allowed ones (none once resolved).',
      tags: TAGS,
      security: WRITE_SECURITY,
      params: ConflictParamsSchema,
      body: StanceBodySchema,
      response: {
        200: sentAs(GEOJSON, ConflictSchema, 'The conflict as changed.', { ETag: ETAG }),
        ...errorResponses(400, 401, 403, 404, 408, 409, 412, 413, 415, 422, 428, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const body: StanceBody = request.body
    const versions = ifMatch(request.headers['if-match'], true) ?? null
    const { scope, organisation } = request.account
    const reasonMissing = body.stance === 'disputed' && (body.reason === undefined || body.reason.trim() === '')
    // One statement when the change is allowed (the usual case): it checks who may act, the
    // version and the move itself. When it stores nothing, the parties as they are now say why.
    const changed = reasonMissing
      ? undefined
      : await store.setStance({ id, named: body.source_id ?? null, scope, organisation, stance: body.stance, reason: body.reason ?? null, versions, by: `@${request.account.id}` })
    if (changed !== undefined) return await (reply as FastifyReply).header('etag', etagOf(changed.version)).type(GEOJSON).send(changed.feature)
    const parties = await store.parties(id, scope)
    if (parties === undefined) throw notFound(id)
    const side = sideOf(request, parties, body.source_id)
    if (versions !== null && !versions.includes(parties.version)) {
      throw new ApiError('PRECONDITION_FAILED', `Conflict ${id} is at version ${parties.version}, not the one If-Match names: read it again (GET) and decide on what it says now.`, { fields: { version: parties.version } })
    }
    const current = side === 'a' ? parties.stanceA : parties.stanceB
    const allowed = side === 'a' ? parties.allowedA : parties.allowedB
    if (!allowed.includes(body.stance)) {
      throw new ApiError('STANCE_NOT_ALLOWED', parties.resolved
        ? `Conflict ${id} is resolved: stances no longer change.`
        : `From ${current}, the party may move to ${allowed.join(' or ')}, not to ${body.stance}.`, { fields: { allowed } })
    }
    if (reasonMissing) {
      throw new ApiError('VALIDATION_FAILED', 'A dispute needs a reason.', { details: [{ pointer: '/reason', message: 'is required to dispute' }] })
    }
    // Everything holds now, so another change came between the UPDATE and this read.
    throw new ApiError('PRECONDITION_FAILED', `Conflict ${id} changed meanwhile (now version ${parties.version}): read it again.`, { fields: { version: parties.version } })
  })

  /** The conflict if the caller may see it (404 otherwise): notes and history have the conflict's visibility. */
  async function visible (request: FastifyRequest, id: string): Promise<ConflictParties> {
    const parties = await store.parties(id, request.account.scope)
    if (parties === undefined) throw notFound(id)
    return parties
  }
  const admin = (request: FastifyRequest): boolean => request.account.scope === 'all'

  app.get('/conflicts/:id/notes', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listConflictNotes', summary: 'The thread of a conflict: both parties and admins read it', tags: TAGS, security: SECURITY,
      params: ConflictParamsSchema, response: { 200: NotesSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    await visible(request, request.params.id)
    const mine = request.account.organisation
    const notes = await store.notes(request.params.id)
    return {
      notes: notes.map((n) => ({
        id: n.id, body: n.body, own: n.organisation === mine, created_at: n.created_at,
        ...(n.organisation === mine || admin(request) ? { author: n.author } : {})
      }))
    }
  })

  app.post('/conflicts/:id/notes', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'addConflictNote', summary: 'Add a note to the thread of a conflict (both parties and admins)', tags: TAGS, security: WRITE_SECURITY,
      params: ConflictParamsSchema, body: NoteBodySchema,
      response: { 201: NoteSchema, ...errorResponses(400, 401, 403, 404, 408, 413, 415, 422, 429, 500, 503) }
    }
  }, async (request, reply) => {
    await visible(request, request.params.id)
    if (request.body.body.trim() === '') throw new ApiError('VALIDATION_FAILED', 'A note cannot be blank.', { details: [{ pointer: '/body', message: 'is blank' }] })
    const n = await store.addNote(request.params.id, request.account.organisation, `@${request.account.id}`, request.body.body)
    return await reply.code(201).send({ id: n.id, body: n.body, own: true, author: n.author, created_at: n.created_at })
  })

  app.get('/conflicts/:id/history', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getConflictHistory', summary: 'Every stance either party took on a conflict, who and when', tags: TAGS, security: SECURITY,
      params: ConflictParamsSchema, response: { 200: HistorySchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    await visible(request, request.params.id)
    const mine = request.account.organisation
    const rows = await store.stances(request.params.id)
    return {
      stances: rows.map((s) => ({
        source_id: s.source_id, from: s.from, to: s.to, version: s.version, recorded_at: s.recorded_at,
        ...(s.reason !== null ? { reason: s.reason } : {}),
        ...(s.organisation === mine || admin(request) ? { recorded_by: s.recorded_by } : {})
      }))
    }
  })

  const carveSchema = {
    summary: 'Give up land: the source without the areas of the other parties of these conflicts (or all), as a new version (If-Match required)',
    description: 'The geometry becomes its difference with the other sources of the named unresolved conflicts (a Polygon or a MultiPolygon; parts narrower than the conflict tolerance dropped); those conflicts end resolved: carved. 422 NOTHING_LEFT when nothing would remain; dry_run=true answers the proposed area and the area lost, storing nothing.',
    tags: TAGS,
    security: WRITE_SECURITY,
    body: CarveBodySchema,
    response: {
      200: sentAs(GEOJSON, Type.Union([SourceFeatureSchema, CarveDryRunSchema]), 'The source as carved (as GET returns it, with its ETag); with dry_run=true, the area it would have.', { ETag: ETAG_HEADER }),
      ...errorResponses(400, 401, 403, 404, 408, 410, 412, 413, 415, 422, 428, 429, 500, 503)
    }
  }
  async function carve (request: FastifyRequest, reply: FastifyReply, id: string, dryRun: boolean, named: string[] | 'all'): Promise<FastifyReply> {
    const versions = ifMatch(request.headers['if-match'], !dryRun) ?? null
    const { scope } = request.account
    const ids = named === 'all' ? null : named
    const by = `@${request.account.id}`
    // The carve-out is tried first, guarded in its UPDATE; only when it stores nothing (or for a
    // dry run) is the preview computed, to tell why (one difference computed, not two).
    if (!dryRun && versions !== null && await store.carve(id, scope, ids, versions, by) !== undefined) return await sendCarved(reply, id, scope)
    const preview = await store.carvePreview(id, scope, ids)
    if (preview === undefined) throw await missing(sources, id, scope)
    if (versions !== null && !versions.includes(preview.version)) {
      throw new ApiError('PRECONDITION_FAILED', `Source ${id} is at version ${preview.version}, not the one If-Match names.`, { fields: { version: preview.version } })
    }
    if (ids !== null) {
      const details = ids.flatMap((c, i) => preview.conflicts.includes(c) ? [] : [{ pointer: `/conflicts/${i}`, message: `is not an unresolved conflict of source ${id}` }])
      if (details.length > 0) throw new ApiError('NOTHING_TO_CARVE', `${details[0]?.pointer} ${details[0]?.message}.`, { details })
    }
    if (preview.conflicts.length === 0) throw new ApiError('NOTHING_TO_CARVE', `Source ${id} has no unresolved conflict to carve out.`)
    if (preview.geometry === null) throw new ApiError('NOTHING_LEFT', `Carving out ${ids === null ? 'every conflict' : 'these conflicts'} would leave nothing of source ${id}: delete it instead.`)
    if (dryRun) {
      return reply.type(GEOJSON).send(`{"type":"Feature","id":${JSON.stringify(id)},"geometry":${preview.geometry},"properties":${JSON.stringify({ dry_run: true, area_m2: preview.area_m2, area_lost_m2: preview.area_lost_m2, conflicts: preview.conflicts })}}`)
    }
    const carved = await store.carve(id, scope, ids, versions, by)
    if (carved === undefined) throw new ApiError('PRECONDITION_FAILED', `Source ${id} changed meanwhile: read it again.`)
    return await sendCarved(reply, id, scope)
  }
  async function sendCarved (reply: FastifyReply, id: string, scope: Scope): Promise<FastifyReply> {
    const row = await sources.find(id, scope)
    if (row === undefined) throw await missing(sources, id, scope)
    return sendSource(reply, row)
  }

  app.post('/sources/carve', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: { operationId: 'carveSource', ...carveSchema, querystring: CarveSourceQuerySchema }
  }, async (request, reply) => await carve(request, reply as FastifyReply, request.query.id, request.query.dry_run === 'true', request.body.conflicts))

  app.post('/collections/sources/items/:id/carve', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: { operationId: 'carveItem', ...carveSchema, params: CarveItemParamsSchema, querystring: CarveQuerySchema }
  }, async (request, reply) => await carve(request, reply as FastifyReply, request.params.id, request.query.dry_run === 'true', request.body.conflicts))
}

export default conflictsRoutes
