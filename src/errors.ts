// The error vocabulary: codes and their one code→status map, the error body's schema, ApiError.
// Every non-2xx body is { status, message, code } plus `details` (validation) or `request_id`
// (5xx); http/error-handler.ts turns any error into one.
import { type Static, Type } from '@sinclair/typebox'

export const ErrorStatus = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  INVALID_GEOJSON: 400,
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
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_PERIOD: 422,
  INVALID_GEOMETRY: 422,
  DUPLICATE_FEATURE: 422,
  INVALID_DATA: 422,
  INVALID_EXPIRY: 422,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503
} as const
export type ErrorCode = keyof typeof ErrorStatus

/** A conflict of a feature not stored (dry runs, SOURCE_OVERLAP): with a source, or with another feature of the request. */
export const ConflictWithSchema = Type.Object({
  id: Type.Optional(Type.String({ description: 'The registered source it conflicts with.' })),
  feature_index: Type.Optional(Type.Integer({ description: 'Or the other feature of the same request it conflicts with.' })),
  overlap_m2: Type.Number(),
  overlap_ratio: Type.Number({ description: 'overlap_m2 over this feature\'s area, 0–1.' }),
  overlap_start: Type.String(),
  overlap_end: Type.String()
})
export type ConflictWith = Static<typeof ConflictWithSchema>

export const ErrorDetailSchema = Type.Object({
  pointer: Type.String({ description: 'JSON pointer into the request body (or query) to the offending value.' }),
  message: Type.String(),
  feature_index: Type.Optional(Type.Integer()),
  feature_id: Type.Optional(Type.String()),
  existing_id: Type.Optional(Type.String({ description: 'For 409: the source that already holds this feature id and period.' })),
  reason: Type.Optional(Type.String({ description: 'For invalid geometry: ST_IsValidReason.' })),
  location: Type.Optional(Type.Array(Type.Number(), { description: 'For invalid geometry: [lon, lat] of the problem.' })),
  ring: Type.Optional(Type.Integer({ description: 'For invalid geometry: ring index (0 = exterior).' })),
  conflicts: Type.Optional(Type.Array(ConflictWithSchema, { description: 'For SOURCE_OVERLAP: what this feature would conflict with.' }))
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

/** One line for the `message` of a validation error: the first problem, and how many more. */
export function summarise (details: ErrorDetail[]): string {
  const first = details[0]
  if (first === undefined) return 'The request is invalid.'
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})` : ''
  return `${first.pointer || '/'} ${first.message}${more}`
}
