// The HTTP side of one source that /sources and /collections/sources/items share: who is acting
// and which versions If-Match names, read from the request; the source sent with its ETag (304
// when If-None-Match names it); and the OpenAPI description of a change's answer.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, summarise } from '../errors.js'
import { sentAs } from '../http/openapi.js'
import { ifMatch, notModified } from '../http/preconditions.js'
import { headerDoc } from '../schemas/primitives.js'
import { type Actor, type WriteOptions, current, heldAt } from './source-changes.js'
import { etagOf } from './source-feature.js'
import { SourceFeatureSchema } from './source-feature.schema.js'
import type { SourceRow } from './sources.repository.js'
import type { SourceStore } from './sources.store.js'
import { type Crs, type CrsCatalogue, crsHeader, outputOf } from './crs.js'

const GEOJSON = 'application/geo+json'

export const ETAG_HEADER = headerDoc('W/"<version>": the version of the source this is (If-Match and If-None-Match take it).')
export const CONTENT_CRS_HEADER = headerDoc('The CRS of the coordinates, as <URI> (OGC API – Features Part 2): the crs asked for, CRS84 by default.')

/**
 * The CRS a write's Content-Crs names (OGC API – Features Part 2), undefined without one (CRS84);
 * 400 listing those served for one that is not.
 */
export function contentCrsOf (request: FastifyRequest, catalogue: CrsCatalogue): Crs | undefined {
  const given = request.headers['content-crs']
  if (given === undefined) return undefined
  const header = Array.isArray(given) ? given.join(',') : given
  const crs = catalogue.find(header)
  if (crs === undefined) {
    const details = [{ pointer: '/headers/content-crs', message: catalogue.unknown(header) }]
    throw new ApiError('VALIDATION_FAILED', `Content-Crs ${details[0]?.message ?? ''}`, { details })
  }
  return crs
}
/** PUT's and PATCH's answer: the source as GET returns it. */
export const CHANGED = sentAs(GEOJSON, SourceFeatureSchema, 'The source as changed (as GET returns it).', { ETag: ETAG_HEADER })
export const CHANGE_ERRORS = [400, 401, 403, 404, 408, 409, 410, 412, 413, 415, 422, 428, 429, 500, 503] as const

export const actorOf = (request: FastifyRequest): Actor => ({ by: `@${request.account.id}`, scope: request.account.scope })

const KEY = /^ck_[0-9a-f]{40}$/

/**
 * The conflict keys a write made knowingly cites (Conflict-Keys: k1,k2), or undefined when it is
 * not made knowingly: on_conflict=acknowledge, or no on_conflict under CONFLICT_POLICY=acknowledge.
 * A malformed key is a 400. Without acknowledge the header is ignored.
 */
/** A write's options from its request: Content-Crs and, in acknowledge mode, Conflict-Keys. */
export function writeOptionsOf (request: FastifyRequest, catalogue: CrsCatalogue, onConflict: string | undefined, policy: string): WriteOptions {
  return { crs: contentCrsOf(request, catalogue), keys: conflictKeysOf(request, onConflict, policy) }
}

export function conflictKeysOf (request: FastifyRequest, onConflict: string | undefined, policy: string): string[] | undefined {
  if ((onConflict ?? policy) !== 'acknowledge') return undefined
  const header = request.headers['conflict-keys']
  const text = Array.isArray(header) ? header.join(',') : header ?? ''
  const keys = [...new Set(text.split(',').map((k) => k.trim()).filter((k) => k !== ''))]
  const bad = keys.find((k) => !KEY.test(k))
  if (bad !== undefined) {
    const details = [{ pointer: 'Conflict-Keys', message: `${bad.slice(0, 60)} is not a conflict key (ck_ and 40 hex digits, as a 409 CONFLICT_KEYS_REQUIRED lists them)` }]
    throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  }
  return keys
}

/** The versions a change's If-Match names (428 without it where `required`; undefined: any). */
export const versionsOf = (request: FastifyRequest, required: boolean): number[] | undefined => ifMatch(request.headers['if-match'], required)

/**
 * GET of one source: the Feature with its ETag (304 when If-None-Match names it), 404 or 410;
 * with as_of, the version held then (404 before it existed, 410 after it was deleted).
 */
export async function sendRead (store: SourceStore, request: FastifyRequest, reply: FastifyReply, id: string, asOf: string | undefined, crs?: Crs): Promise<FastifyReply> {
  const scope = request.account.scope
  const output = crs === undefined ? undefined : { crs: outputOf(crs) }
  if (crs !== undefined) void reply.header('content-crs', crsHeader(crs))
  if (asOf !== undefined) {
    const version = await heldAt(store, scope, id, asOf, output)
    return reply.header('etag', etagOf(version.version)).type(GEOJSON).send(version.feature)
  }
  const row = await current(store, scope, id, output)
  void reply.header('etag', etagOf(row.version))
  if (notModified(request.headers['if-none-match'], row.version)) return reply.code(304).send()
  return reply.type(GEOJSON).send(row.feature)
}

/** A source after a change, as GET sends it, with its ETag. */
export function sendSource (reply: FastifyReply, row: SourceRow): FastifyReply {
  return reply.header('etag', etagOf(row.version)).type(GEOJSON).send(row.feature)
}
