// Authentication as decorators routes opt into: `onRequest: [app.authenticate, app.requireRole(…)]`.
// Tokens are HS256 JWTs (algorithm pinned, exp/iat/iss/aud/sub required). The account's current
// status (disabled, role, password change) comes from a short-lived in-process cache, so a
// disabled account's tokens stop working within ACCOUNT_CACHE_TTL_SECONDS without a database
// round trip on every request.
import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { AppConfig } from '../config.js'
import type { Role, Scope } from '../db/database.js'
import { ApiError } from '../errors.js'
import type { AccountStatus } from '../accounts/accounts.repository.js'
import type { AccountStore } from '../accounts/accounts.store.js'

export interface TokenClaims { sub: string, org: string, role: Role }
export interface AuthenticatedAccount {
  id: string
  organisation: string
  role: Role
  /** The sources it may see: its organisation's, or every organisation's for an admin. */
  scope: Scope
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
    signToken: (claims: TokenClaims) => { token: string, expires_in: number }
  }
  interface FastifyRequest {
    account: AuthenticatedAccount
  }
}

const REALM = 'Bearer realm="source-registry"'
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/

/** "Bearer <t>" (scheme case-insensitive), or a bare token as the specification's tables show it. */
export function extractToken (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header)
  if (m !== null) return m[1]
  const bare = header.trim()
  return JWT_SHAPE.test(bare) ? bare : undefined
}

function unauthorized (message: string, tokenGiven: boolean): ApiError {
  return new ApiError('UNAUTHORIZED', message, {
    headers: { 'www-authenticate': tokenGiven ? `${REALM}, error="invalid_token"` : REALM }
  })
}

// fast-jwt's TokenError.codes.expired (app.jwt.verify throws fast-jwt's errors as they are).
const FAST_JWT_EXPIRED = 'FAST_JWT_EXPIRED'
const GET_TOKEN = 'Obtain a new token with POST /token.'

export default fp<{ config: AppConfig, accounts: AccountStore }>(async (app, { config, accounts }) => {
  await app.register(fastifyJwt, {
    secret: config.JWT_SECRET,
    sign: { algorithm: 'HS256', expiresIn: config.TOKEN_TTL_SECONDS, iss: config.JWT_ISSUER, aud: config.JWT_AUDIENCE },
    verify: {
      algorithms: ['HS256'],
      allowedIss: config.JWT_ISSUER,
      allowedAud: config.JWT_AUDIENCE,
      requiredClaims: ['exp', 'iat', 'sub', 'org', 'role', 'iss', 'aud'],
      // fast-jwt's verified-token cache (keyed by a SHA-256 of the token): a token seen before
      // skips decoding and the claim checks until it expires; entries never outlive its exp.
      cache: 10_000
    }
  })

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

  app.decorateRequest('account', null as unknown as AuthenticatedAccount)

  app.decorate('signToken', (claims: TokenClaims) => ({
    token: app.jwt.sign({ sub: claims.sub, org: claims.org, role: claims.role }),
    expires_in: config.TOKEN_TTL_SECONDS
  }))

  app.decorate('authenticate', async (request: FastifyRequest, _reply: FastifyReply) => {
    const header = request.headers.authorization
    if (header === undefined || header.trim() === '') throw unauthorized(`Missing Authorization header: send "Authorization: Bearer <token>". ${GET_TOKEN}`, false)
    const token = extractToken(header)
    if (token === undefined) throw unauthorized(`Malformed Authorization header: expected "Bearer <token>". ${GET_TOKEN}`, true)
    let claims: FastifyRequest['user']
    try {
      claims = app.jwt.verify<FastifyRequest['user']>(token)
    } catch (err) {
      if ((err as { code?: string }).code === FAST_JWT_EXPIRED) throw unauthorized(`The token has expired. ${GET_TOKEN}`, true)
      throw unauthorized(`The token is invalid. ${GET_TOKEN}`, true)
    }
    const status = await accountStatus(claims.sub)
    if (status === false || status.disabled) throw unauthorized(`The account is disabled or no longer exists. ${GET_TOKEN}`, true)
    if (claims.iat < Math.floor(status.passwordChangedAt.getTime() / 1000)) throw unauthorized(`The token was issued before the password changed. ${GET_TOKEN}`, true)
    // Role and organisation are read from the account, not the token, so a change applies
    // within the cache TTL rather than only when the token expires.
    request.account = {
      id: claims.sub,
      organisation: status.organisation,
      role: status.role,
      scope: status.role === 'admin' ? 'all' : { organisation: status.organisation }
    }
  })

  app.decorate('requireRole', (...roles: Role[]) => async (request: FastifyRequest) => {
    if (!roles.includes(request.account.role)) {
      throw new ApiError('FORBIDDEN', `Your role (${request.account.role}) may not do this; it needs one of: ${roles.join(', ')}.`)
    }
  })
}, { name: 'auth', fastify: '5.x' })
