// Authentication as decorators routes opt into: `onRequest: [app.authenticate, app.requireRole(…)]`.
// A request authenticates with one of:
// - a token of POST /token: an HS256 JWT (algorithm pinned, exp/iat/iss/aud/sub required), as
//   "Authorization: Bearer <token>";
// - an API key (`srk_…`, accounts/api-key-format.ts) as "Bearer srk_…", or as the password of HTTP
//   Basic (any user name): what GIS clients' Basic authentication sends. An account's password is
//   never taken in Basic: it is for POST /token alone, where the login throttle watches it;
// - a token of POST /oauth/token (OAuth2 client credentials): a JWT like the first, carrying the
//   key's id (client_id) and scope, and checked against the key on every use, so it stops
//   working when the key is revoked or expires.
// The account's current status (disabled, role, password change) and a key's row come from
// short-lived in-process caches, so a disabled account or a revoked key stops working within
// ACCOUNT_CACHE_TTL_SECONDS on every instance, without a database round trip per request.
// A `read` key acts as its account capped at viewer (reads only, in the account's own reach);
// a `write` key keeps the account's role.
import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { AuthConfig } from '../config.js'
import type { KeyScope, Role, Scope } from '../db/database.js'
import { ApiError } from '../errors.js'
import { challenge } from '../http/challenge.js'
import type { AccountStatus } from '../accounts/accounts.repository.js'
import type { AccountStore } from '../accounts/accounts.store.js'
import { ApiKeyAuthenticator, type KeyCheck } from '../accounts/api-key-auth.js'
import type { ApiKeyStore } from '../accounts/api-keys.store.js'
import { looksLikeKey } from '../accounts/api-key-format.js'
import type { LoginThrottle } from '../accounts/login-throttle.js'

export interface TokenClaims {
  sub: string
  org: string
  role: Role
  /** OAuth2 tokens: the API key they were issued for (RFC 9068's claim name). */
  client_id?: string
  /** OAuth2 tokens: what they may do, at most the key's scope. */
  scope?: KeyScope
}
export interface AuthenticatedAccount {
  id: string
  organisation: string
  /** The role this request acts with: the account's, capped at viewer for a `read` key. */
  role: Role
  /** The sources it may see: its organisation's, or every organisation's for an admin. */
  scope: Scope
  /** The API key the request came with (itself, or through an OAuth2 token); undefined for a password's token. */
  key?: { id: string, scope: KeyScope, expiresAt: Date | null }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: TokenClaims & { iat: number, exp: number }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    authenticate: onRequestAsyncHookHandler
    requireRole: (...roles: Role[]) => onRequestAsyncHookHandler
    /** 403 for a request made with an API key or a token obtained with one. */
    requirePassword: onRequestAsyncHookHandler
    signToken: (claims: TokenClaims, ttlSeconds?: number) => { token: string, expires_in: number }
    /** Sets request.account from an API key (POST /oauth/token's client secret); answers why not. */
    signInWithKey: (request: FastifyRequest, key: string) => Promise<KeyRefusal | undefined>
    apiKeys: ApiKeyAuthenticator
  }
  interface FastifyRequest {
    account: AuthenticatedAccount
  }
}

export type KeyRefusal =
  | { reason: 'invalid' | 'revoked' | 'expired' | 'disabled', message: string }
  | { reason: 'throttled', message: string, retryAfterSeconds: number }

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/
const BEARER = /^\s*Bearer\s+(\S+)\s*$/i
const BASIC = /^\s*Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i

type Credential =
  | { kind: 'missing' }
  | { kind: 'malformed' }
  | { kind: 'jwt', token: string }
  | { kind: 'key', key: string, scheme: 'bearer' | 'basic' }
  /** HTTP Basic whose password is not an API key. */
  | { kind: 'password' }

/**
 * What an Authorization header carries: "Bearer <t>" (scheme case-insensitive), a bare token as
 * the specification's tables show it, or "Basic base64(user:password)".
 */
function readCredential (header: string | undefined): Credential {
  if (header === undefined || header.trim() === '') return { kind: 'missing' }
  const bearer = BEARER.exec(header)?.[1]
  if (bearer !== undefined) return looksLikeKey(bearer) ? { kind: 'key', key: bearer, scheme: 'bearer' } : { kind: 'jwt', token: bearer }
  const basic = BASIC.exec(header)?.[1]
  if (basic !== undefined) {
    const pair = Buffer.from(basic, 'base64').toString('utf8')
    const colon = pair.indexOf(':')
    if (colon < 0) return { kind: 'malformed' }
    const password = pair.slice(colon + 1)
    return looksLikeKey(password) ? { kind: 'key', key: password, scheme: 'basic' } : { kind: 'password' }
  }
  const bare = header.trim()
  if (JWT_SHAPE.test(bare)) return { kind: 'jwt', token: bare }
  if (looksLikeKey(bare) && !/\s/.test(bare)) return { kind: 'key', key: bare, scheme: 'bearer' }
  return { kind: 'malformed' }
}

// fast-jwt's TokenError.codes.expired (app.jwt.verify throws fast-jwt's errors as they are).
const FAST_JWT_EXPIRED = 'FAST_JWT_EXPIRED'
const GET_TOKEN = 'Obtain a new token with POST /token.'
const NEW_KEY = 'Create a new key with POST /api-keys (or on the map page).'

function keyRefusal (check: Exclude<KeyCheck, { ok: true }>, viaToken: boolean): string {
  const what = viaToken ? 'The API key this token was issued for' : 'The API key'
  if (check.reason === 'revoked') return `${what} has been revoked. ${NEW_KEY}`
  if (check.reason === 'expired') return `${what} expired at ${check.key.expiresAt?.toISOString() ?? '?'}. ${NEW_KEY}`
  return viaToken ? `${what} no longer exists. ${NEW_KEY}` : `The API key is not valid: send it whole, as "Bearer srk_…" or as the password of HTTP Basic. ${NEW_KEY}`
}

export default fp<{ config: AuthConfig, accounts: AccountStore, keys: ApiKeyStore, throttle: LoginThrottle }>(async (app, { config, accounts, keys, throttle }) => {
  await app.register(fastifyJwt, {
    secret: config.JWT_SECRET,
    sign: { algorithm: 'HS256', expiresIn: config.TOKEN_TTL_SECONDS, iss: config.JWT_ISSUER, aud: config.JWT_AUDIENCE },
    verify: {
      algorithms: ['HS256'],
      allowedIss: config.JWT_ISSUER,
      allowedAud: config.JWT_AUDIENCE,
      requiredClaims: ['exp', 'iat', 'sub', 'org', 'role', 'iss', 'aud']
    }
  })

  // Tokens that verified, by the token itself, until their exp: a token seen again skips the
  // signature and claim checks. Only tokens this service signed get in, so the keys stay short.
  // fast-jwt's own cache keys a SHA-256 of the token, which cost as much as the verification it
  // saves, and warns at every start when given a key of one's own. The cache's ttl runs on a
  // monotonic clock, which stands still while the machine is suspended, so a hit is also held
  // against exp by the wall clock: past it, the token is verified again (and refused as expired).
  const verified = new LRUCache<string, FastifyRequest['user']>({ max: 10_000 })
  function verifyToken (token: string): FastifyRequest['user'] {
    const hit = verified.get(token)
    if (hit !== undefined && Date.now() < hit.exp * 1000) return hit
    const claims = app.jwt.verify<FastifyRequest['user']>(token)
    const ttl = claims.exp * 1000 - Date.now()
    if (ttl > 0) verified.set(token, claims, { ttl })
    return claims
  }

  // ACCOUNT_CACHE_TTL_SECONDS = 0 turns the cache off: every request reads the account.
  const statusCache = config.ACCOUNT_CACHE_TTL_SECONDS > 0
    ? new LRUCache<string, AccountStatus | false>({ max: 100_000, ttl: config.ACCOUNT_CACHE_TTL_SECONDS * 1000 })
    : undefined

  async function accountStatus (id: string): Promise<AccountStatus | false> {
    const cached = statusCache?.get(id)
    if (cached !== undefined) return cached
    const status = (await accounts.status(id)) ?? false
    statusCache?.set(id, status)
    return status
  }

  const apiKeys = new ApiKeyAuthenticator(keys, throttle, {
    cacheTtlSeconds: config.ACCOUNT_CACHE_TTL_SECONDS,
    lastUsedIntervalSeconds: config.API_KEY_LAST_USED_INTERVAL_SECONDS,
    log: app.log
  })
  app.decorate('apiKeys', apiKeys)
  // Last-use writes still under way finish before the database closes.
  app.addHook('preClose', async () => { await apiKeys.flush() })

  app.decorateRequest('account', null as unknown as AuthenticatedAccount)

  app.decorate('signToken', (claims: TokenClaims, ttlSeconds?: number) => {
    const payload: TokenClaims = { sub: claims.sub, org: claims.org, role: claims.role }
    if (claims.client_id !== undefined) Object.assign(payload, { client_id: claims.client_id, scope: claims.scope })
    const shorter = ttlSeconds !== undefined && ttlSeconds < config.TOKEN_TTL_SECONDS
    return {
      token: shorter ? app.jwt.sign(payload, { expiresIn: ttlSeconds }) : app.jwt.sign(payload),
      expires_in: shorter ? ttlSeconds : config.TOKEN_TTL_SECONDS
    }
  })

  const unauthorized = (request: FastifyRequest, message: string, invalidToken: boolean): ApiError =>
    new ApiError('UNAUTHORIZED', message, { headers: { 'www-authenticate': challenge(request, { invalidToken }) } })

  /**
   * Sets request.account: the account behind a credential, as it is now; `key` caps its role.
   * Answers why not when the account is disabled, gone, or changed its password since `issuedAt`.
   */
  async function signIn (request: FastifyRequest, accountId: string, key: AuthenticatedAccount['key'], issuedAt?: number): Promise<string | undefined> {
    const status = await accountStatus(accountId)
    if (status === false || status.disabled) return `The account is disabled or no longer exists. ${GET_TOKEN}`
    // A password change ends the password's tokens; API keys are credentials of their own and
    // go on working (revoke them to end them).
    if (issuedAt !== undefined && key === undefined && issuedAt < Math.floor(status.passwordChangedAt.getTime() / 1000)) {
      return `The token was issued before the password changed. ${GET_TOKEN}`
    }
    // Role and organisation are read from the account, not the token, so a change applies
    // within the cache TTL rather than only when the token expires.
    request.account = {
      id: accountId,
      organisation: status.organisation,
      role: key?.scope === 'read' ? 'viewer' : status.role,
      scope: status.role === 'admin' ? 'all' : { organisation: status.organisation },
      ...(key !== undefined ? { key } : {})
    }
    if (key !== undefined) apiKeys.used(key.id)
    return undefined
  }

  app.decorate('signInWithKey', async (request: FastifyRequest, key: string): Promise<KeyRefusal | undefined> => {
    const check = await apiKeys.verify(key, request.ip)
    if (!check.ok) {
      return check.reason === 'throttled'
        ? { reason: 'throttled', retryAfterSeconds: check.retryAfterSeconds, message: `Too many failed logins and wrong API keys from your address; retry in ${check.retryAfterSeconds} s.` }
        : { reason: check.reason, message: keyRefusal(check, false) }
    }
    const refused = await signIn(request, check.key.accountId, { id: check.key.id, scope: check.key.scope, expiresAt: check.key.expiresAt })
    return refused === undefined ? undefined : { reason: 'disabled', message: refused }
  })

  app.decorate('authenticate', async (request: FastifyRequest, reply: FastifyReply) => {
    // An answer that depends on who asks is kept by no shared cache (private) and by a client's
    // cache only until revalidated (no-cache), each time with the credentials of then: QGIS
    // 3.22's network cache, keyed by URL alone, otherwise answers a layer opened with a wrong or
    // revoked key from an earlier good one. Routes with a policy of their own (tiles: private,
    // max-age; feeds and secrets: no-store) replace it; 401s carry it too.
    void reply.header('cache-control', 'private, no-cache').header('vary', 'Authorization')
    const credential = readCredential(request.headers.authorization)
    switch (credential.kind) {
      case 'missing':
        throw unauthorized(request, `Missing Authorization header: send "Authorization: Bearer <token>" (${GET_TOKEN}), or an API key as "Bearer srk_…" or as the password of HTTP Basic.`, false)
      case 'malformed':
        throw unauthorized(request, `Malformed Authorization header: expected "Bearer <token>", or HTTP Basic with an API key as the password. ${GET_TOKEN}`, true)
      case 'password':
        throw unauthorized(request, `HTTP Basic takes an API key (srk_…) as the password, not the account's password. ${NEW_KEY} Or use a token: ${GET_TOKEN}`, false)
      case 'key': {
        const refused = await app.signInWithKey(request, credential.key)
        if (refused?.reason === 'throttled') throw new ApiError('TOO_MANY_REQUESTS', refused.message, { headers: { 'retry-after': String(refused.retryAfterSeconds) } })
        if (refused !== undefined) throw unauthorized(request, refused.message, credential.scheme === 'bearer')
        return
      }
      case 'jwt': {
        let claims: FastifyRequest['user']
        try {
          claims = verifyToken(credential.token)
        } catch (err) {
          if ((err as { code?: string }).code === FAST_JWT_EXPIRED) throw unauthorized(request, `The token has expired. ${GET_TOKEN}`, true)
          throw unauthorized(request, `The token is invalid. ${GET_TOKEN}`, true)
        }
        let key: AuthenticatedAccount['key']
        if (claims.client_id !== undefined) {
          const check = await apiKeys.current(claims.client_id)
          if (!check.ok || check.key.accountId !== claims.sub) {
            throw unauthorized(request, check.ok || check.reason === 'throttled' ? `The token is invalid. ${GET_TOKEN}` : keyRefusal(check, true), true)
          }
          key = { id: check.key.id, scope: claims.scope === 'write' && check.key.scope === 'write' ? 'write' : 'read', expiresAt: check.key.expiresAt }
        }
        const refused = await signIn(request, claims.sub, key, claims.iat)
        if (refused !== undefined) throw unauthorized(request, refused, true)
      }
    }
  })

  app.decorate('requireRole', (...roles: Role[]) => async (request: FastifyRequest) => {
    if (!roles.includes(request.account.role)) {
      const capped = request.account.key?.scope === 'read' ? ' (a read API key acts as a viewer)' : ''
      throw new ApiError('FORBIDDEN', `Your role (${request.account.role}${capped}) may not do this; it needs one of: ${roles.join(', ')}.`)
    }
  })

  app.decorate('requirePassword', async (request: FastifyRequest) => {
    if (request.account.key !== undefined) {
      throw new ApiError('FORBIDDEN', 'API keys are managed with a token of POST /token (e-mail and password), not with an API key: a stolen key cannot make more keys.')
    }
  })
}, { name: 'auth', fastify: '5.x' })
