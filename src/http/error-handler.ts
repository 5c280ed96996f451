// The one error handler: any error → { status, message, code, … } with the right status. Our
// ApiErrors as they are; schema failures as 400 with pointers; a named constraint of sql/ as its
// rule says (db/constraints.ts); a PostgreSQL data exception as 422; an unreachable database as
// 503; Fastify's own 4xx renamed to our codes; anything else a 500 whose body cites the request
// id while the log has the error. Every 4xx is logged at info with its code and account.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, type ErrorBody, type ErrorCode, ErrorStatus, summarise } from '../errors.js'
import { isDatabaseUnavailable, poolerHint } from '../db/availability.js'
import { constraintRule } from '../db/constraints.js'
import { lingerBeforeClose } from './lingering-close.js'
import { type ValidationIssue, validationDetails } from './validation.js'

const DB_RETRY_AFTER_SECONDS = '5'

// Fastify's own 4xx errors, renamed to our codes so clients see one vocabulary.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_REQUEST',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_REQUEST'
}

function codeForStatus (status: number): ErrorCode {
  const found = (Object.keys(ErrorStatus) as ErrorCode[]).find((c) => ErrorStatus[c] === status)
  return found ?? (status >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST')
}

/** Fastify's 413 and 415 messages, made to say what would be accepted. */
function clientMessage (code: ErrorCode, message: string, request: FastifyRequest): string {
  if (code === 'PAYLOAD_TOO_LARGE') {
    return `The request body is larger than the limit of ${request.routeOptions.bodyLimit ?? 'the service\'s'} bytes.`
  }
  if (code === 'UNSUPPORTED_MEDIA_TYPE') {
    const type = request.headers['content-type'] ?? '(none)'
    const accepted = request.routeOptions.config.mediaTypes ?? ['application/json']
    return `Unsupported Content-Type ${JSON.stringify(type)}: send ${accepted.join(' or ')}.`
  }
  return message
}

/**
 * A 5xx's error for the log, with the one-line fix when it is a known misconfiguration: a
 * transaction pooler refuses the startup packet (a 503) or meets a named statement of another
 * session (a 500).
 */
function logged (err: Error): { err: Error, hint?: string } {
  const hint = poolerHint(err)
  return hint === undefined ? { err } : { err, hint }
}

function bodyOf (err: FastifyError | ApiError | Error, request: FastifyRequest, headers: Record<string, string>): ErrorBody {
  if (err instanceof ApiError) {
    Object.assign(headers, err.headers)
    return { status: err.statusCode, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) }
  }
  if ('validation' in err && Array.isArray(err.validation)) {
    const config = request.routeOptions.config
    const details = validationDetails(err.validation as ValidationIssue[], err.validationContext, request.body, config.describeBodyPointer)
    const code: ErrorCode = (err.validationContext === 'body' ? config.bodyValidationCode : undefined) ?? 'VALIDATION_FAILED'
    return { status: 400, code, message: summarise(details), details }
  }
  const rule = constraintRule(err)
  if (rule !== undefined) return { status: ErrorStatus[rule.code], code: rule.code, message: rule.message }
  const pgError = err as unknown as { code?: string, severity?: string }
  if (pgError.severity !== undefined && pgError.code?.startsWith('22') === true) {
    // A PostgreSQL data exception (class 22) on input that passed our checks: still the client's data.
    request.log.warn({ err }, 'data exception from the database')
    return { status: 422, code: 'INVALID_DATA', message: 'The database rejected a value in the request as invalid.' }
  }
  if (isDatabaseUnavailable(err)) {
    request.log.error(logged(err), 'database unavailable')
    headers['retry-after'] = DB_RETRY_AFTER_SECONDS
    return { status: 503, code: 'SERVICE_UNAVAILABLE', message: `The database is unavailable; retry later (request ${request.id}).` }
  }
  const status = (err as FastifyError).statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = FASTIFY_CODES[(err as FastifyError).code] ?? codeForStatus(status)
    return { status, code, message: clientMessage(code, err.message, request) }
  }
  request.log.error(logged(err), 'unhandled error')
  return { status: 500, code: 'INTERNAL_ERROR', message: `Internal server error (request ${request.id}).` }
}

export function errorHandler (err: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const headers: Record<string, string> = {}
  const body = bodyOf(err, request, headers)
  if (body.status === 413) {
    // The body was not read: close the connection, but only once the client has had the answer.
    headers.connection = 'close'
    lingerBeforeClose(request.raw.socket)
  }
  if (body.status < 500) {
    // Who gets 4xx and why, for ops; the account id, never the token.
    request.log.info({ status: body.status, code: body.code, accountId: request.account?.id }, `rejected: ${body.message}`)
  } else {
    body.request_id = String(request.id)
  }
  if (body.status === 401) headers['www-authenticate'] ??= 'Bearer'
  void reply.code(body.status).headers(headers).type('application/json; charset=utf-8').send(body)
}
