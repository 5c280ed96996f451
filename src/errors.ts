// Error codes, the one code→status map, and the one error handler. Every non-2xx body is
// { status, message, code } plus `details` (validation) or `request_id` (5xx).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from '@sinclair/typebox'
import { lingerBeforeClose } from './http/lingering-close.js'

export const ErrorStatus = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  INVALID_GEOJSON: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  SOURCE_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_PERIOD: 422,
  INVALID_GEOMETRY: 422,
  DUPLICATE_FEATURE: 422,
  INVALID_DATA: 422,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503
} as const
export type ErrorCode = keyof typeof ErrorStatus

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The code a route's body-schema failures carry (default VALIDATION_FAILED). */
    bodyValidationCode?: ErrorCode
  }
}

export const ErrorDetailSchema = Type.Object({
  pointer: Type.String({ description: 'JSON pointer into the request body (or query) to the offending value.' }),
  message: Type.String(),
  feature_index: Type.Optional(Type.Integer()),
  feature_id: Type.Optional(Type.String()),
  existing_id: Type.Optional(Type.String({ description: 'For 409: the source that already holds this feature id and period.' })),
  reason: Type.Optional(Type.String({ description: 'For invalid geometry: ST_IsValidReason.' })),
  location: Type.Optional(Type.Array(Type.Number(), { description: 'For invalid geometry: [lon, lat] of the problem.' })),
  ring: Type.Optional(Type.Integer({ description: 'For invalid geometry: ring index (0 = exterior).' }))
})
export type ErrorDetail = Static<typeof ErrorDetailSchema>

export const ErrorSchema = Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  code: Type.String(),
  details: Type.Optional(Type.Array(ErrorDetailSchema)),
  request_id: Type.Optional(Type.String())
}, { $id: 'Error' })
export type ErrorBody = Static<typeof ErrorSchema>

/** Response schemas for the given error statuses, for a route's `schema.response`. */
export function errorResponses (...statuses: number[]): Record<number, typeof ErrorSchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorSchema]))
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly details?: ErrorDetail[]
  readonly headers?: Record<string, string>
  constructor (code: ErrorCode, message: string, extra: { details?: ErrorDetail[], headers?: Record<string, string> } = {}) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.details = extra.details
    this.headers = extra.headers
  }

  get statusCode (): number { return ErrorStatus[this.code] }
}

const DB_RETRY_AFTER_SECONDS = '5'
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN'])
// SQLSTATEs meaning "the database is not there right now", not "your query is wrong".
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400'])

export function isDatabaseUnavailable (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string' && (CONNECTION_ERRNOS.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) return true
  return /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|Connection refused/i.test(err.message)
}

// Named constraints of sql/ → what the client is told when one of them rejects a write. The
// sources routes add per-feature details; this map is the backstop for every other path.
export const CONSTRAINT_ERRORS: Record<string, { code: ErrorCode, message: string }> = {
  sources_geom_valid: { code: 'INVALID_GEOMETRY', message: 'The polygon is not valid (ST_IsValid).' },
  sources_geom_not_empty: { code: 'INVALID_GEOMETRY', message: 'The polygon is empty.' },
  sources_period_not_empty: { code: 'INVALID_PERIOD', message: 'start_at must be strictly before end_at.' },
  sources_period_start_before_end: { code: 'INVALID_PERIOD', message: 'start_at must be strictly before end_at.' },
  sources_period_finite: { code: 'INVALID_PERIOD', message: 'start_at and end_at must both be finite.' },
  sources_period_bounds: { code: 'INVALID_PERIOD', message: 'The period must include its start and exclude its end ([start_at, end_at)).' },
  sources_period_in_window: { code: 'INVALID_PERIOD', message: 'The period is outside the acceptable window.' },
  sources_feature_period_excl: { code: 'SOURCE_CONFLICT', message: 'A source with this feature id and an overlapping period already exists.' },
  sources_feature_id_length: { code: 'VALIDATION_FAILED', message: 'The feature id must be 1 to 256 characters.' }
}

// Fastify's own 4xx errors, renamed to our codes so clients see one vocabulary.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_REQUEST',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_REQUEST'
}

/** Fastify's 413 and 415 messages, made to say what would be accepted. */
function clientMessage (code: ErrorCode, message: string, request: FastifyRequest): string {
  if (code === 'PAYLOAD_TOO_LARGE') {
    return `The request body is larger than the limit of ${request.routeOptions.bodyLimit ?? 'the service\'s'} bytes.`
  }
  if (code === 'UNSUPPORTED_MEDIA_TYPE') {
    const type = request.headers['content-type'] ?? '(none)'
    return `Unsupported Content-Type ${JSON.stringify(type)}: send application/json${request.url.startsWith('/sources') ? ' or application/geo+json' : ''}.`
  }
  return message
}

function codeForStatus (status: number): ErrorCode {
  const found = (Object.keys(ErrorStatus) as ErrorCode[]).find((c) => ErrorStatus[c] === status)
  return found ?? (status >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST')
}

type ValidationIssue = { instancePath: string, message?: string, keyword: string, params: Record<string, unknown> }

/** Ajv issues → details with JSON pointers into the request ("/features/2/geometry/type"). */
export function validationDetails (issues: ValidationIssue[], context: string | undefined, body: unknown): ErrorDetail[] {
  return issues.map((issue) => {
    let pointer = issue.instancePath
    let message = issue.message ?? 'is invalid'
    if (issue.keyword === 'required') {
      pointer += `/${String(issue.params.missingProperty)}`
      message = 'is required'
    } else if (issue.keyword === 'const') {
      message = `must be ${JSON.stringify(issue.params.allowedValue)}`
    } else if (issue.keyword === 'enum') {
      message = `must be one of ${JSON.stringify(issue.params.allowedValues)}`
    }
    // Query parameters are named "?id"; body problems are JSON pointers ("/features/0/id").
    if (context === 'querystring') pointer = `?${pointer.slice(1)}`
    return { pointer, message, ...featureOf(pointer, context === 'body' ? body : undefined) }
  })
}

/** For a pointer into a FeatureCollection, the feature's index and client id, so errors name both. */
export function featureOf (pointer: string, body: unknown): { feature_index?: number, feature_id?: string } {
  const m = /^\/features\/(\d+)(?:\/|$)/.exec(pointer)
  if (m === null) return {}
  const index = Number(m[1])
  const features = (body as { features?: unknown } | undefined)?.features
  const id = Array.isArray(features) ? (features[index] as { id?: unknown } | undefined)?.id : undefined
  return typeof id === 'string' ? { feature_index: index, feature_id: id } : { feature_index: index }
}

/** One line for the `message` of a validation error: the first problem, and how many more. */
export function summarise (details: ErrorDetail[]): string {
  const first = details[0]
  if (first === undefined) return 'The request is invalid.'
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})` : ''
  return `${first.pointer || '/'} ${first.message}${more}`
}

/** The one error handler: maps any error to { status, message, code, … } and logs 5xx in full. */
export function errorHandler (err: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply): void {
  let body: ErrorBody
  let headers: Record<string, string> = {}
  const pgError = err as unknown as { code?: string, constraint?: string, severity?: string }

  if (err instanceof ApiError) {
    body = { status: err.statusCode, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) }
    headers = err.headers ?? {}
  } else if ('validation' in err && Array.isArray(err.validation)) {
    const details = validationDetails(err.validation as ValidationIssue[], err.validationContext, request.body)
    const code: ErrorCode = (err.validationContext === 'body' ? request.routeOptions.config.bodyValidationCode : undefined) ?? 'VALIDATION_FAILED'
    body = { status: 400, code, message: summarise(details), details }
  } else if (pgError.constraint !== undefined && CONSTRAINT_ERRORS[pgError.constraint] !== undefined) {
    const mapped = CONSTRAINT_ERRORS[pgError.constraint] as { code: ErrorCode, message: string }
    body = { status: ErrorStatus[mapped.code], code: mapped.code, message: mapped.message }
  } else if (pgError.severity !== undefined && pgError.code?.startsWith('22') === true) {
    // A PostgreSQL data exception (class 22) on input that passed our checks: still the client's data.
    request.log.warn({ err }, 'data exception from the database')
    body = { status: 422, code: 'INVALID_DATA', message: 'The database rejected a value in the request as invalid.' }
  } else if (isDatabaseUnavailable(err)) {
    request.log.error({ err }, 'database unavailable')
    body = { status: 503, code: 'SERVICE_UNAVAILABLE', message: `The database is unavailable; retry later (request ${request.id}).`, request_id: String(request.id) }
    headers['retry-after'] = DB_RETRY_AFTER_SECONDS
  } else {
    const status = (err as FastifyError).statusCode
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const code = FASTIFY_CODES[(err as FastifyError).code] ?? codeForStatus(status)
      body = { status, code, message: clientMessage(code, err.message, request) }
    } else {
      request.log.error({ err }, 'unhandled error')
      body = { status: 500, code: 'INTERNAL_ERROR', message: `Internal server error (request ${request.id}).`, request_id: String(request.id) }
    }
  }
  if (body.status === 413) {
    // The body was not read: close the connection, but only once the client has had the answer.
    headers.connection = 'close'
    lingerBeforeClose(request.raw.socket)
  }
  if (body.status < 500) {
    // Who gets 4xx and why, for ops; the account id, never the token.
    request.log.info({ status: body.status, code: body.code, accountId: request.account?.id }, `rejected: ${body.message}`)
  }
  if (body.status >= 500) body.request_id = String(request.id)
  if (body.status === 401) headers['www-authenticate'] ??= 'Bearer'
  void reply.code(body.status).headers(headers).type('application/json; charset=utf-8').send(body)
}
