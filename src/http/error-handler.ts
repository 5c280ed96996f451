// The one error handler: any error → { status, message, code, … } with the right status. Our
// ApiErrors as they are; schema failures as 400 with pointers; a named constraint of sql/ as its
// rule says, a PostgreSQL data exception as 422, an unreachable database or a statement past its
// timeout as 503 (db/errors.ts classifies them); Fastify's own 4xx renamed to our codes; anything else
// a 500 whose body cites the request id while the log has the error. Every 4xx is logged at info
// with its code and account.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { STATUS_CODES, maxHeaderSize } from 'node:http'
import type { Socket } from 'node:net'
import { ApiError, type ErrorBody, type ErrorCode, ErrorStatus, summarise } from '../errors.js'
import { classifyDbError, poolerHint } from '../db/errors.js'
import { challenge } from './challenge.js'
import { lingerBeforeClose } from './lingering-close.js'
import { type ValidationIssue, validationDetails } from './validation.js'

const DB_RETRY_AFTER_SECONDS = '5'

// Fastify's own 4xx errors, renamed to our codes so clients see one vocabulary.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_REQUEST',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_REQUEST',
  // The router's own (app.ts frameworkErrors): a path that is not percent-encoded UTF-8, and a
  // path parameter over the router's maxParamLength.
  FST_ERR_BAD_URL: 'BAD_REQUEST',
  FST_ERR_MAX_PARAM_LENGTH: 'URI_TOO_LONG'
}

/** The router's limit on a path parameter (app.ts routerOptions), which the 414 names: the longest id is 68. */
export const MAX_PATH_PARAM_LENGTH = 100

// Their messages, where Fastify's would only repeat the path.
const FASTIFY_MESSAGES: Record<string, string> = {
  FST_ERR_BAD_URL: 'The path is not valid: a percent-encoded sequence in it does not decode to UTF-8.',
  FST_ERR_MAX_PARAM_LENGTH: `A segment of the path is over ${MAX_PATH_PARAM_LENGTH} characters: no id of this service is that long.`
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
    return { status: err.statusCode, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}), ...err.fields }
  }
  if ('validation' in err && Array.isArray(err.validation)) {
    const config = request.routeOptions.config
    const details = validationDetails(err.validation as ValidationIssue[], err.validationContext, request.body, config.describeBodyPointer)
    const code: ErrorCode = (err.validationContext === 'body' ? config.bodyValidationCode : undefined) ?? 'VALIDATION_FAILED'
    return { status: 400, code, message: summarise(details), details }
  }
  const db = classifyDbError(err)
  if (db?.kind === 'constraint') return { status: ErrorStatus[db.rule.code], code: db.rule.code, message: db.rule.message }
  if (db?.kind === 'data') {
    request.log.warn({ err }, 'data exception from the database')
    return { status: 422, code: 'INVALID_DATA', message: 'The database rejected a value in the request as invalid.' }
  }
  if (db?.kind === 'timeout') {
    // Not the client's error, nor a bug: the database was too slow for the time the service
    // gives a statement (overloaded, or this request is very large). Nothing was stored.
    request.log.error({ err }, 'statement timeout')
    request.server.metrics?.statementTimeouts.inc()
    headers['retry-after'] = DB_RETRY_AFTER_SECONDS
    return { status: 503, code: 'SERVICE_UNAVAILABLE', message: `The database did not finish this request in time, and nothing was stored; retry later, or send less at once (request ${request.id}).` }
  }
  if (db?.kind === 'unavailable') {
    request.log.error(logged(err), 'database unavailable')
    headers['retry-after'] = DB_RETRY_AFTER_SECONDS
    return { status: 503, code: 'SERVICE_UNAVAILABLE', message: `The database is unavailable; retry later (request ${request.id}).` }
  }
  const status = (err as FastifyError).statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const fastifyCode = (err as FastifyError).code
    const code = FASTIFY_CODES[fastifyCode] ?? codeForStatus(status)
    return { status, code, message: FASTIFY_MESSAGES[fastifyCode] ?? clientMessage(code, err.message, request) }
  }
  request.log.error(logged(err), 'unhandled error')
  return { status: 500, code: 'INTERNAL_ERROR', message: `Internal server error (request ${request.id}).` }
}

export function errorHandler (err: FastifyError | ApiError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const headers: Record<string, string> = {}
  const body = bodyOf(err, request, headers)
  if (body.code === 'PAYLOAD_TOO_LARGE') {
    // The body was not read: close the connection, but only once the client has had the answer.
    headers.connection = 'close'
    lingerBeforeClose(request.raw.socket, request.server.server)
  }
  if (body.status < 500) {
    // Who gets 4xx and why, for ops; the account id, never the token.
    request.log.info({ status: body.status, code: body.code, accountId: request.account?.id }, `rejected: ${body.message}`)
  } else {
    body.request_id = String(request.id)
  }
  if (body.status === 401) headers['www-authenticate'] ??= challenge(request)
  void reply.code(body.status).headers(headers).type('application/json; charset=utf-8').send(body)
}

/**
 * Node's client errors, raised before there is a request to answer (a head over Node's header
 * limit, a request that does not arrive in time, bytes that are not HTTP): answered in the error
 * shape above, as Fastify's default handler answers them in its own, and the connection closed.
 */
export function clientErrorHandler (timeouts: { headersMs: number, requestMs: number }) {
  return function (this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const [status, code, message]: [number, ErrorCode, string] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'REQUEST_TIMEOUT', `The request did not arrive in time: its head must arrive within ${timeouts.headersMs / 1000} s and all of it within ${timeouts.requestMs / 1000} s.`]
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'HEADERS_TOO_LARGE', `The request line and headers are over ${Math.floor(maxHeaderSize / 1024)} KB.`]
        : [400, 'BAD_REQUEST', 'The request is not valid HTTP/1.1.']
    this.log.info({ status, code, err: { code: err.code } }, `rejected: ${message}`)
    const body = JSON.stringify({ status, code, message } satisfies ErrorBody)
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
    }
    socket.destroy(err)
  }
}
