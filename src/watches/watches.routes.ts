// Watched areas: POST /watches (an organisation's editors and admins), GET /watches (a page),
// GET /watches/{id}, DELETE /watches/{id}. A watch is its organisation's alone: another
// organisation gets 404 (admins see all). When any organisation's source starts to overlap a
// watched area in its period (and matches its filter), the watching organisation gets a
// watch.matched event through the feed, SSE and webhooks (sql/functions/watches.sql): the
// source's id, the overlap in m² and the overlapping period, never its geometry or attributes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { EventsConfig } from '../config.js'
import { ApiError, type ErrorDetail, errorResponses, summarise } from '../errors.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { parseDateTime } from '../sources/datetime.js'
import { checkArea } from '../sources/geojson.js'
import { checkWatchFilter, type FilterLang, watchFilterSql } from './watch-filter.js'
import type { WatchRow } from './watches.repository.js'
import {
  CreateWatchSchema, type Watch, WatchDeletedSchema, WatchListQuerySchema, WatchListSchema, WatchParamsSchema, WatchSchema
} from './watches.schema.js'
import type { WatchStore } from './watches.store.js'

const TAGS = ['Watches']
const DEFAULT_LIMIT = 100

function view (row: WatchRow): Watch {
  return {
    id: row.id,
    geometry: JSON.parse(row.geometry) as Watch['geometry'],
    start_at: row.start_at,
    end_at: row.end_at,
    area_m2: row.area_m2,
    ...(row.filter !== null ? { filter: row.filter } : {}),
    ...(row.filter_lang !== null ? { filter_lang: row.filter_lang as FilterLang } : {}),
    created_at: row.created_at
  }
}

const notFound = (id: string): ApiError => new ApiError('NOT_FOUND', `No watch ${id} of your organisation.`)
const invalid = (code: 'VALIDATION_FAILED' | 'INVALID_GEOJSON' | 'INVALID_PERIOD' | 'INVALID_GEOMETRY', details: ErrorDetail[]): ApiError =>
  new ApiError(code, summarise(details), { details })

const watchesRoutes: FastifyPluginAsyncTypebox<{ config: EventsConfig, store: WatchStore }> = async (app, { config, store }) => {
  const maxM2 = config.WATCH_MAX_AREA_KM2 * 1e6

  app.post('/watches', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'createWatch',
      summary: 'Watch an area: be told (watch.matched) when any source starts to overlap it',
      description: 'The area (a Polygon or MultiPolygon of at most WATCH_MAX_AREA_KM2 km², 10,000 by default), the period [start_at, end_at) and an optional CQL2 filter on the sources. When a source of any organisation is created or changed so that it overlaps the area (an overlap of positive area) in the period and matches the filter, your organisation gets a watch.matched event (GET /events, SSE, webhooks) with the source\'s id, the overlap in m² and the overlapping period: no geometry, no attributes.',
      tags: TAGS,
      security: WRITE_SECURITY,
      body: CreateWatchSchema,
      response: { 201: WatchSchema, ...errorResponses(400, 401, 403, 408, 413, 415, 422, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const body = request.body
    const shape: ErrorDetail[] = []
    checkArea(body.geometry, '/geometry/coordinates', shape)
    if (shape.length > 0) throw invalid('INVALID_GEOJSON', shape)
    const period: ErrorDetail[] = []
    const start = parseDateTime(body.start_at)
    const end = parseDateTime(body.end_at)
    if (typeof start === 'string') period.push({ pointer: '/start_at', message: `start_at ${start}` })
    if (typeof end === 'string') period.push({ pointer: '/end_at', message: `end_at ${end}` })
    if (period.length > 0) throw invalid('VALIDATION_FAILED', period)
    if (typeof start !== 'string' && typeof end !== 'string' && Date.parse(start.iso) >= Date.parse(end.iso)) {
      throw invalid('INVALID_PERIOD', [{ pointer: '/end_at', message: 'start_at must be strictly before end_at' }])
    }
    let filter: { text: string, lang: FilterLang, sql: string } | null = null
    if (body.filter !== undefined) {
      const lang: FilterLang = body.filter_lang ?? (typeof body.filter === 'string' ? 'cql2-text' : 'cql2-json')
      const text = typeof body.filter === 'string' ? body.filter : JSON.stringify(body.filter)
      const checked = checkWatchFilter(text, lang)
      if ('error' in checked) throw invalid('VALIDATION_FAILED', [{ pointer: '/filter', message: checked.error }])
      const problems = checked.geometries.length === 0 ? [] : await store.geometryProblems(checked.geometries)
      const problem = problems.find((p) => p !== null)
      if (problem !== undefined && problem !== null) throw invalid('VALIDATION_FAILED', [{ pointer: '/filter', message: `holds an invalid geometry: ${problem}` }])
      filter = { text, lang, sql: watchFilterSql(checked) }
    } else if (body.filter_lang !== undefined) {
      throw invalid('VALIDATION_FAILED', [{ pointer: '/filter_lang', message: 'names the language of a filter: send one (filter), or leave it out' }])
    }
    const area = await store.checkArea(body.geometry)
    if (!area.valid) throw invalid('INVALID_GEOMETRY', [{ pointer: '/geometry', message: `is not a valid polygon: ${area.reason ?? 'ST_IsValid'}` }])
    if (area.areaM2 > maxM2) {
      const km2 = (n: number) => n.toLocaleString('en-GB', { maximumFractionDigits: 1 })
      throw new ApiError('WATCH_TOO_LARGE', `The area is ${km2(area.areaM2 / 1e6)} km²: a watch may cover at most ${km2(config.WATCH_MAX_AREA_KM2)} km² (WATCH_MAX_AREA_KM2). Watch it as several smaller areas.`,
        { details: [{ pointer: '/geometry', message: `covers ${km2(area.areaM2 / 1e6)} km², more than the limit of ${km2(config.WATCH_MAX_AREA_KM2)} km²` }] })
    }
    const row = await store.create({
      organisation: request.account.organisation,
      createdBy: request.account.id,
      geometry: body.geometry,
      startAt: (start as { iso: string }).iso,
      endAt: (end as { iso: string }).iso,
      filter
    })
    void reply.code(201).header('location', `/watches/${row.id}`)
    return view(row)
  })

  app.get('/watches', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listWatches',
      summary: 'Your organisation\'s watched areas (admins: every organisation\'s), in id order',
      tags: TAGS,
      security: SECURITY,
      querystring: WatchListQuerySchema,
      response: { 200: WatchListSchema, ...errorResponses(400, 401, 429, 500, 503) }
    }
  }, async (request) => {
    const limit = request.query.limit === undefined ? DEFAULT_LIMIT : Number(request.query.limit)
    const rows = await store.list(request.account.scope, limit, request.query.cursor)
    const shown = rows.slice(0, limit)
    const self = new URL(request.url, `${request.protocol}://${request.host}`)
    const links = [{ href: self.toString(), rel: 'self', type: 'application/json' }]
    const last = shown[shown.length - 1]
    if (rows.length > limit && last !== undefined) {
      const next = new URL(self)
      next.searchParams.set('limit', String(limit))
      next.searchParams.set('cursor', last.id)
      links.push({ href: next.toString(), rel: 'next', type: 'application/json' })
    }
    return { watches: shown.map(view), links }
  })

  app.get('/watches/:id', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getWatch',
      summary: 'One watched area of your organisation',
      tags: TAGS,
      security: SECURITY,
      params: WatchParamsSchema,
      response: { 200: WatchSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const row = await store.find(request.params.id, request.account.scope)
    if (row === undefined) throw notFound(request.params.id)
    return view(row)
  })

  app.delete('/watches/:id', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'deleteWatch',
      summary: 'Stop watching an area (the events already sent stay in the feed)',
      tags: TAGS,
      security: WRITE_SECURITY,
      params: WatchParamsSchema,
      response: { 200: WatchDeletedSchema, ...errorResponses(400, 401, 403, 404, 408, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    if (!await store.delete(request.params.id, request.account.scope)) throw notFound(request.params.id)
    return { message: `Watch ${request.params.id} deleted.` }
  })
}

export default watchesRoutes
