// The error vocabulary: codes and their one code→status map, the error body's schema (one per
// status for the OpenAPI document, each with what it means and the headers it comes with), ApiError.
// Every non-2xx body is { status, message, code } plus `details` (validation) or `request_id`
// (5xx); http/error-handler.ts turns any error into one.
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { ConflictWithSchema, type HeaderDoc, headerDoc as header } from './schemas/primitives.js'

export const ErrorStatus = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  INVALID_GEOJSON: 400,
  INVALID_CURSOR: 400,
  WEBHOOK_URL_REFUSED: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  REQUEST_TIMEOUT: 408,
  SOURCE_CONFLICT: 409,
  SOURCE_OVERLAP: 409,
  ACCOUNT_EXISTS: 409,
  API_KEY_LIMIT: 409,
  SUBSCRIPTION_LIMIT: 409,
  STANCE_NOT_ALLOWED: 409,
  CONFLICT_KEYS_REQUIRED: 409,
  GONE: 410,
  CURSOR_EXPIRED: 410,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  ATTRIBUTES_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  INVALID_PERIOD: 422,
  INVALID_GEOMETRY: 422,
  OUTSIDE_CRS_AREA: 422,
  DUPLICATE_FEATURE: 422,
  INVALID_DATA: 422,
  ATTRIBUTES_INVALID: 422,
  INVALID_EXPIRY: 422,
  NOTHING_LEFT: 422,
  NOTHING_TO_CARVE: 422,
  WATCH_TOO_LARGE: 422,
  PRECONDITION_REQUIRED: 428,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503
} as const
export type ErrorCode = keyof typeof ErrorStatus


export const ErrorDetailSchema = Type.Object({
  pointer: Type.String({ description: 'JSON pointer into the request body (or query) to the offending value.' }),
  message: Type.String(),
  feature_index: Type.Optional(Type.Integer()),
  feature_id: Type.Optional(Type.String()),
  existing_id: Type.Optional(Type.String({ description: 'For 409: the source that already holds this feature id and period.' })),
  reason: Type.Optional(Type.String({ description: 'For invalid geometry: ST_IsValidReason.' })),
  location: Type.Optional(Type.Array(Type.Number(), { description: 'For invalid geometry: [lon, lat] of the problem.' })),
  part: Type.Optional(Type.Integer({ description: 'For an invalid MultiPolygon: the part (polygon) index, from 0.' })),
  ring: Type.Optional(Type.Integer({ description: 'For invalid geometry: ring index (0 = exterior), of the part when there is one.' })),
  conflicts: Type.Optional(Type.Array(ConflictWithSchema, { description: 'For SOURCE_OVERLAP: what this feature would conflict with.' }))
})
export type ErrorDetail = Static<typeof ErrorDetailSchema>

/** CONFLICT_KEYS_REQUIRED's list: per other organisation's source the write would start a conflict with, its key at its current version. */
export const ConflictKeysSchema = Type.Array(Type.Object({
  source_id: Type.String({ description: 'The other organisation\'s source (its id only, as conflicts show it).' }),
  key: Type.String({ pattern: '^ck_[0-9a-f]{40}$', description: 'Its conflict key at its current version: send it back in Conflict-Keys.' })
}, { additionalProperties: false }), { description: 'For CONFLICT_KEYS_REQUIRED: every key the write must cite (Conflict-Keys: k1,k2), one per other organisation\'s source it would start a conflict with.' })

export const ErrorSchema = Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  code: Type.String(),
  details: Type.Optional(Type.Array(ErrorDetailSchema)),
  request_id: Type.Optional(Type.String()),
  deleted_at: Type.Optional(Type.String({ description: 'For GONE: when the source was deleted.' })),
  version: Type.Optional(Type.Integer({ description: 'For GONE: the version its deletion is; for PRECONDITION_FAILED: the current version.' })),
  oldest: Type.Optional(Type.String({ description: 'For CURSOR_EXPIRED: the oldest cursor still served.' })),
  allowed: Type.Optional(Type.Array(Type.String(), { description: 'For STANCE_NOT_ALLOWED: the stances the party may move to now (none once resolved).' })),
  conflict_keys: Type.Optional(ConflictKeysSchema)
}, { $id: 'Error' })
export type ErrorBody = Static<typeof ErrorSchema>

export type ErrorHttpStatus = typeof ErrorStatus[ErrorCode]

// What each status means for a client: the description of its response in the OpenAPI document.
const ERROR_MEANINGS: Record<ErrorHttpStatus, string> = {
  400: 'The request is malformed, or a parameter or the body is invalid: `details` points at each problem (a JSON pointer into the body, or ?name for a query parameter).',
  401: 'No token, or a token that is malformed, invalid or expired, or an account disabled since; POST /token gives a new one. Also wrong credentials at POST /token.',
  403: 'The account\'s role may not do this.',
  404: 'No such source in your scope, or no such path.',
  405: 'The path is served, but not with this method: Allow lists the methods it takes.',
  406: 'The Accept header asks for a media type this resource is not sent in.',
  408: 'The request did not arrive in time.',
  409: 'The data conflicts with what is registered: `details` names each feature and what it conflicts with; for a stance, `allowed` names the stances the party may take now; for CONFLICT_KEYS_REQUIRED (on_conflict=acknowledge), `conflict_keys` lists the keys to cite in Conflict-Keys.',
  410: '`GONE`: the source was deleted: `deleted_at` says when and `version` is the version its deletion is; its versions stay readable (/versions). `CURSOR_EXPIRED`: the feed cursor (or `Last-Event-ID`) lies before the oldest event kept (`EVENTS_RETENTION`): events after it were removed; `oldest` is the oldest cursor still served.',
  412: 'A precondition of the request (If-Match, If-Unmodified-Since) does not hold.',
  413: 'PAYLOAD_TOO_LARGE: the request body is over the size limit; the connection is closed after this answer. ATTRIBUTES_TOO_LARGE: a feature\'s attributes are over 16,384 bytes: `details` points at each.',
  414: 'A path segment is longer than any id of this service.',
  415: 'The request body\'s Content-Type is not one this operation reads.',
  416: 'The Range asked for lies outside the file.',
  422: 'The request is understood but its data is invalid (a period outside the acceptable window, an invalid polygon): `details` points at each problem.',
  428: 'This change needs If-Match with the source\'s ETag as last read (GET), so that it cannot undo a change not seen.',
  429: 'Too many requests, or too many failed logins: retry after Retry-After seconds.',
  431: 'The request line and headers are too large.',
  500: 'Unexpected server error; `request_id` identifies it in the service\'s log. Retry later with backoff.',
  503: 'Temporarily unavailable (the database is unreachable or too slow, or the service is busy with large requests or drawing tiles): retry after Retry-After seconds.'
}

const RETRY_AFTER = header('Seconds to wait before retrying.')
// The headers an error of a status comes with (the error handler, auth.ts, rate-limit.ts).
const ERROR_HEADERS: Partial<Record<ErrorHttpStatus, Record<string, HeaderDoc>>> = {
  401: { 'WWW-Authenticate': header('Bearer; on the operations that need a token, with realm="source-registry" and, when a token was sent, error="invalid_token" (RFC 6750).') },
  405: { Allow: header('The methods the path is served with.') },
  413: { Connection: header('close, for PAYLOAD_TOO_LARGE (the body was not read).') },
  429: {
    'Retry-After': RETRY_AFTER,
    'X-RateLimit-Limit': header('Requests allowed per window (the request rate limit; not sent for the login throttle).'),
    'X-RateLimit-Remaining': header('Requests left in this window.'),
    'X-RateLimit-Reset': header('Seconds until the window resets.')
  },
  503: { 'Retry-After': RETRY_AFTER }
}

// The statuses whose errors may point into the request.
const WITH_DETAILS = new Set<number>([400, 409, 413, 422])

function errorBodySchema (status: ErrorHttpStatus) {
  const codes = (Object.keys(ErrorStatus) as ErrorCode[]).filter((code) => ErrorStatus[code] === status)
  // `status` and `code` as enums of a type, not `const`s: the serializer writes a const as it is
  // whatever the value, an enum it writes as given, for the document to check.
  return Type.Object({
    status: Type.Unsafe<number>({ type: 'integer', enum: [status] }),
    message: Type.String(),
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: codes }),
    ...(WITH_DETAILS.has(status) ? { details: Type.Optional(Type.Array(ErrorDetailSchema)) } : {}),
    ...(status === 410
      ? {
          deleted_at: Type.Optional(Type.String({ format: 'date-time', description: 'GONE: when the source was deleted.' })),
          version: Type.Optional(Type.Integer({ minimum: 2, description: 'GONE: the version its deletion is.' })),
          oldest: Type.Optional(Type.String({ description: 'CURSOR_EXPIRED: the oldest cursor still served: `?after=` (or `Last-Event-ID`) with it reads from the oldest event kept.' }))
        }
      : {}),
    ...(status === 409
      ? {
          allowed: Type.Optional(Type.Array(Type.String(), { description: 'For STANCE_NOT_ALLOWED: the stances the party may move to now (none once resolved).' })),
          conflict_keys: Type.Optional(ConflictKeysSchema)
        }
      : {}),
    ...(status === 412 ? { version: Type.Optional(Type.Integer({ minimum: 1, description: 'For a source: its current version (the ETag to send is W/"<version>").' })) } : {}),
    ...(status >= 500 ? { request_id: Type.String({ description: 'The request\'s id (also X-Request-ID), as the log has it.' }) } : {})
  }, { $id: `Error${status}`, additionalProperties: false })
}

/** One error body schema per status, named Error400 … Error503: app.ts adds them, the document lists each once. */
export const ErrorBodySchemas: TSchema[] = [...new Set(Object.values(ErrorStatus))].map(errorBodySchema)

/** The OpenAPI response of an error status: a reference to its body schema, its meaning and headers. */
export function errorResponse (status: ErrorHttpStatus) {
  return {
    ...Type.Unsafe<ErrorBody>(Type.Ref(`Error${status}`)),
    description: ERROR_MEANINGS[status],
    ...(ERROR_HEADERS[status] !== undefined ? { headers: ERROR_HEADERS[status] } : {})
  }
}

/** Response schemas for the given error statuses, for a route's `schema.response`. */
export function errorResponses (...statuses: ErrorHttpStatus[]): Record<number, ReturnType<typeof errorResponse>> {
  return Object.fromEntries(statuses.map((s) => [s, errorResponse(s)]))
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly details?: ErrorDetail[]
  readonly headers?: Record<string, string>
  readonly fields?: Pick<ErrorBody, 'deleted_at' | 'version' | 'oldest' | 'allowed' | 'conflict_keys'>
  constructor (code: ErrorCode, message: string, extra: { details?: ErrorDetail[], headers?: Record<string, string>, fields?: Pick<ErrorBody, 'deleted_at' | 'version' | 'oldest' | 'allowed' | 'conflict_keys'> } = {}) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.details = extra.details
    this.headers = extra.headers
    this.fields = extra.fields
  }

  get statusCode (): number { return ErrorStatus[this.code] }
}

/** One line for the `message` of a validation error: the first problem, and how many more. */
export function summarise (details: ErrorDetail[]): string {
  const first = details[0]
  if (first === undefined) return 'The request is invalid.'
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})` : ''
  return `${first.pointer || '/'} ${first.message}${more}`
}
