// POST /oauth/token: OAuth2 client credentials (RFC 6749 §4.4) for GIS clients and scripts that
// speak OAuth2. The client is an API key: client_id its id, client_secret the key, sent as HTTP
// Basic (§2.3.1, each part form-encoded first) or as form fields. The token is a JWT like POST
// /token's, carrying the key's id (client_id) and the scope granted, and checked against the key
// on every use (plugins/auth.ts): it stops working when the key is revoked or expires, and never
// outlives the key's expiry. Its errors are RFC 6749 §5.2's shape ({error, error_description});
// a rate limit, an oversized body and server errors keep the service's one error shape.
// A route of its own, so that POST /token keeps its JSON contract exactly.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthConfig } from '../config.js'
import { KEY_SCOPES, type KeyScope } from '../db/database.js'
import { ApiError, errorResponses } from '../errors.js'
import { challenge } from '../http/challenge.js'
import { errorHandler } from '../http/error-handler.js'
import { OAuthErrorSchema, type OAuthErrorCode, OAuthTokenRequestSchema, OAuthTokenSchema } from './api-keys.schema.js'

const FORM = 'application/x-www-form-urlencoded'
const FORM_BODY_LIMIT = 8192

class OAuthError extends Error {
  constructor (readonly error: OAuthErrorCode, message: string, readonly status: 400 | 401 = 400) {
    super(message)
  }
}

// RFC 6749 §5.2: error_description is printable ASCII without '"' and '\'.
const describe = (text: string): string => text.replace(/["\\]/g, '\'').replace(/[^\x20-\x7e]/g, '?')

/** The client's id and secret from "Basic base64(form-encoded id : form-encoded secret)"; undefined without Basic. */
function basicClient (header: string | undefined): { id: string, secret: string } | undefined {
  const encoded = header === undefined ? undefined : /^\s*Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header)?.[1]
  if (encoded === undefined) return undefined
  const pair = Buffer.from(encoded, 'base64').toString('utf8')
  const colon = pair.indexOf(':')
  if (colon < 0) throw new OAuthError('invalid_client', 'HTTP Basic must carry client_id:client_secret.', 401)
  const formDecode = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '))
  try {
    return { id: formDecode(pair.slice(0, colon)), secret: formDecode(pair.slice(colon + 1)) }
  } catch {
    throw new OAuthError('invalid_client', 'HTTP Basic credentials are not form-encoded UTF-8 (RFC 6749 section 2.3.1).', 401)
  }
}

function oauthErrorHandler (err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  let refusal: OAuthError | undefined
  if (err instanceof OAuthError) refusal = err
  else if ('validation' in err && Array.isArray(err.validation)) refusal = new OAuthError('invalid_request', `The request is invalid: ${err.message}.`)
  else if ((err as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') refusal = new OAuthError('invalid_request', `Send the parameters as ${FORM} (RFC 6749 section 4.4.2).`)
  // Fastify's other 400s (a malformed body or Content-Length): this route's 400 is RFC 6749's.
  else if ((err as FastifyError).statusCode === 400) refusal = new OAuthError('invalid_request', `The request is malformed: ${err.message}.`)
  if (refusal === undefined) { errorHandler(err, request, reply); return }
  request.log.info({ status: refusal.status, error: refusal.error }, `oauth token refused: ${refusal.message}`)
  const headers: Record<string, string> = { 'cache-control': 'no-store', pragma: 'no-cache' }
  if (refusal.status === 401) headers['www-authenticate'] = challenge(request)
  void reply.code(refusal.status).headers(headers).type('application/json; charset=utf-8')
    .send({ error: refusal.error, error_description: describe(refusal.message) })
}

const oauthRoutes: FastifyPluginAsyncTypebox<{ config: AuthConfig }> = async (app, { config }) => {
  // Encapsulated: only this route reads forms; everywhere else a form is a 415.
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    const seen = new Set<string>()
    const params = [...new URLSearchParams(body as string)]
    for (const [name] of params) {
      if (seen.has(name)) { done(new OAuthError('invalid_request', `${name} is given more than once (RFC 6749 section 3.2).`), undefined); return }
      seen.add(name)
    }
    // fromEntries defines own properties: a parameter named __proto__ is only a parameter.
    done(null, Object.fromEntries(params))
  })

  app.post('/oauth/token', {
    errorHandler: oauthErrorHandler,
    preValidation: async (request) => {
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
        throw new OAuthError('invalid_request', `Send the parameters as ${FORM} (RFC 6749 section 4.4.2).`)
      }
    },
    schema: {
      operationId: 'createOAuthToken',
      summary: 'OAuth2 client credentials: a bearer token for an API key',
      description: 'grant_type=client_credentials; client_id is the API key\'s id and client_secret the key, as HTTP Basic or form fields. Errors as RFC 6749 section 5.2.',
      tags: ['Authentication'],
      security: [{ basicAuth: [] }, {}],
      body: { content: { [FORM]: { schema: OAuthTokenRequestSchema } } },
      response: {
        200: OAuthTokenSchema,
        400: OAuthErrorSchema,
        401: OAuthErrorSchema,
        ...errorResponses(413, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const form = request.body as { grant_type: string, client_id?: string, client_secret?: string, scope?: string }
    if (form.grant_type !== 'client_credentials') {
      throw new OAuthError('unsupported_grant_type', `grant_type ${form.grant_type} is not supported: this service issues tokens for client_credentials (an API key) only.`)
    }
    const basic = basicClient(request.headers.authorization)
    if (basic !== undefined && form.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Authenticate the client one way: HTTP Basic, or client_id and client_secret in the body, not both (RFC 6749 section 2.3).')
    }
    if (basic !== undefined && form.client_id !== undefined && form.client_id !== basic.id) {
      throw new OAuthError('invalid_request', 'client_id in the body differs from the one in HTTP Basic.')
    }
    const clientId = basic?.id ?? form.client_id
    const secret = basic?.secret ?? form.client_secret
    if (clientId === undefined || secret === undefined) {
      throw new OAuthError('invalid_client', 'Client authentication is missing: send the API key\'s id and the key as HTTP Basic (RFC 6749 section 2.3.1), or as client_id and client_secret.', 401)
    }

    const refused = await app.signInWithKey(request, secret)
    if (refused?.reason === 'throttled') {
      throw new ApiError('TOO_MANY_REQUESTS', refused.message, { headers: { 'retry-after': String(refused.retryAfterSeconds) } })
    }
    if (refused !== undefined) {
      const why = { invalid: 'the client secret is not a valid API key', revoked: 'the API key has been revoked', expired: 'the API key has expired', disabled: 'the account is disabled' }[refused.reason]
      throw new OAuthError('invalid_client', `Client authentication failed: ${why}.`, 401)
    }
    const account = request.account
    const key = account.key
    if (key === undefined || key.id !== clientId) throw new OAuthError('invalid_client', 'Client authentication failed: client_id is not the id of this API key.', 401)

    const requested = (form.scope ?? '').split(' ').filter((s) => s !== '')
    const unknown = requested.filter((s) => !(KEY_SCOPES as readonly string[]).includes(s))
    if (unknown.length > 0) throw new OAuthError('invalid_scope', `Unknown scope ${unknown.join(' ')}: ask for read or write.`)
    const granted: KeyScope = requested.length === 0 ? key.scope : requested.includes('write') ? 'write' : 'read'
    if (granted === 'write' && key.scope === 'read') throw new OAuthError('invalid_scope', 'This API key is read-only: ask for scope=read, or for no scope.')

    // Never past the key's own expiry.
    const remaining = key.expiresAt === null ? Infinity : Math.floor((key.expiresAt.getTime() - Date.now()) / 1000)
    const issued = app.signToken({ sub: account.id, org: account.organisation, role: granted === 'read' ? 'viewer' : account.role, client_id: key.id, scope: granted }, Math.max(1, Math.min(remaining, config.TOKEN_TTL_SECONDS)))
    request.log.info({ keyId: key.id, accountId: account.id, scope: granted }, 'oauth token issued')
    void reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' })
    return { access_token: issued.token, token_type: 'Bearer' as const, expires_in: issued.expires_in, scope: granted }
  })
}

export default oauthRoutes
