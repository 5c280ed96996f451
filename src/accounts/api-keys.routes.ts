// POST /api-keys (a new key, shown once), GET /api-keys (the caller's keys; an admin's: any
// account's), DELETE /api-keys/?id= (revoke). Keys are made only with a token of POST /token
// (e-mail and password), never with a key: a stolen key cannot make keys that outlive its
// revocation. Creation and revocation are logged with who did it; the key itself never is.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthConfig } from '../config.js'
import { ApiError, errorResponses } from '../errors.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import type { ApiKeyRow } from './api-keys.repository.js'
import {
  ApiKeyListSchema, ApiKeyQuerySchema, type ApiKeyView, CreateApiKeySchema, CreatedApiKeySchema, ListApiKeysQuerySchema, RevokedSchema
} from './api-keys.schema.js'
import type { ApiKeyStore } from './api-keys.store.js'
import { keyPrefix, newApiKey } from './api-key-format.js'

const TAGS = ['API keys']

function view (row: ApiKeyRow, now = Date.now()): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    scope: row.scope,
    prefix: keyPrefix(row.id),
    account_id: row.account_id,
    created_at: row.created_at.toISOString(),
    ...(row.expires_at !== null ? { expires_at: row.expires_at.toISOString() } : {}),
    expired: row.expires_at !== null && row.expires_at.getTime() <= now,
    ...(row.last_used_at !== null ? { last_used_at: row.last_used_at.toISOString() } : {})
  }
}

const apiKeysRoutes: FastifyPluginAsyncTypebox<{ config: AuthConfig, keys: ApiKeyStore }> = async (app, { config, keys }) => {
  app.post('/api-keys', {
    onRequest: [app.authenticate, app.requirePassword],
    schema: {
      operationId: 'createApiKey',
      summary: 'Create an API key for your account (shown once)',
      description: 'Needs a token of POST /token (e-mail and password): an API key cannot create keys. The key never has more rights than your account; a read key only reads.',
      tags: TAGS,
      security: [{ bearerAuth: [] }],
      body: CreateApiKeySchema,
      response: { 201: CreatedApiKeySchema, ...errorResponses(400, 401, 403, 409, 413, 415, 422, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { name, scope, expires_at: expiresText } = request.body
    let expiresAt: Date | null = null
    if (expiresText !== undefined) {
      expiresAt = new Date(expiresText)
      if (!(expiresAt.getTime() > Date.now())) {
        throw new ApiError('INVALID_EXPIRY', `expires_at (${expiresText}) must be in the future.`, { details: [{ pointer: '/expires_at', message: 'must be in the future' }] })
      }
    }
    const account = request.account
    const made = newApiKey()
    const row = await keys.create({ id: made.id, accountId: account.id, name, scope, secretSha256: made.secretSha256, expiresAt }, config.API_KEY_MAX_PER_ACCOUNT)
    if (row === undefined) {
      throw new ApiError('API_KEY_LIMIT', `Your account already holds ${config.API_KEY_MAX_PER_ACCOUNT} API keys in force: revoke one first (DELETE /api-keys/?id=).`)
    }
    request.log.info({ keyId: row.id, accountId: row.account_id, by: account.id, scope: row.scope, expiresAt: row.expires_at }, 'api key created')
    void reply.code(201).header('cache-control', 'no-store')
    return { ...view(row), key: made.key, message: 'API key created. Copy it now: it is not shown again.' }
  })

  app.get('/api-keys', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listApiKeys',
      summary: 'List API keys: yours (admins: every account\'s, or one account\'s)',
      tags: TAGS,
      security: SECURITY,
      querystring: ListApiKeysQuerySchema,
      response: { 200: ApiKeyListSchema, ...errorResponses(400, 401, 403, 429, 500, 503) }
    }
  }, async (request) => {
    const account = request.account
    const wanted = request.query.account_id
    const admin = account.scope === 'all'
    if (wanted !== undefined && wanted !== account.id && !admin) throw new ApiError('FORBIDDEN', 'Only admins may list another account\'s API keys.')
    const rows = await keys.list(wanted ?? (admin ? undefined : account.id))
    const now = Date.now()
    return { api_keys: rows.map((r) => view(r, now)) }
  })

  app.delete('/api-keys', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key: yours (admins: any account\'s)',
      description: 'Refused on every instance within ACCOUNT_CACHE_TTL_SECONDS, with the tokens of POST /oauth/token issued for it. A read key may not revoke.',
      tags: TAGS,
      security: WRITE_SECURITY,
      querystring: ApiKeyQuerySchema,
      response: { 200: RevokedSchema, ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const account = request.account
    if (account.key?.scope === 'read') throw new ApiError('FORBIDDEN', 'A read API key may not revoke keys: use a write key or a token of POST /token.')
    const { id } = request.query
    const row = await keys.revoke(id, account.id, account.scope === 'all' ? undefined : account.id)
    // Another account's key is "not found" to a non-admin, as another organisation's source is.
    if (row === undefined) throw new ApiError('NOT_FOUND', `No API key ${id} in force${account.scope === 'all' ? '' : ' on your account'}.`)
    app.apiKeys.forget(id)
    request.log.info({ keyId: id, accountId: row.account_id, by: account.id }, 'api key revoked')
    return { message: `API key ${id} (${row.name}) revoked.` }
  })
}

export default apiKeysRoutes
