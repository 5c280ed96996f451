// POST /token: e-mail and password → a bearer token.
import { setTimeout } from 'node:timers/promises'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ApiError, errorResponses } from '../errors.js'
import type { AccountStore } from './accounts.store.js'
import type { LoginThrottle } from './login-throttle.js'
import { dummyHash, verifyPassword } from './passwords.js'

export const CredentialsSchema = Type.Object({
  // No U+0000: the e-mail is looked up in PostgreSQL, whose text cannot hold it.
  email: Type.String({ minLength: 1, maxLength: 320, pattern: '^[^\\u0000]*$' }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
})

export const TokenSchema = Type.Object({
  token: Type.String(),
  expires_in: Type.Integer({ description: 'Seconds until the token expires.' })
}, { description: 'A bearer token for "Authorization: Bearer <token>".' })

const WRONG_CREDENTIALS = 'Wrong e-mail or password.'

const tokenRoutes: FastifyPluginAsyncTypebox<{ accounts: AccountStore, throttle: LoginThrottle }> = async (app, { accounts, throttle }) => {
  app.post('/token', {
    schema: {
      operationId: 'createToken',
      summary: 'Obtain a bearer token with e-mail and password',
      tags: ['Authentication'],
      security: [],
      body: CredentialsSchema,
      response: { 200: TokenSchema, ...errorResponses(400, 401, 408, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    const { email, password } = request.body
    const check = await throttle.check(email, request.ip)
    if (check.refused) {
      request.log.info({ email, limit: check.limit, retryAfter: check.retryAfterSeconds }, 'login refused: too many failures')
      app.metrics.loginRefused.inc({ limit: check.limit })
      throw new ApiError('TOO_MANY_REQUESTS', `Too many failed logins ${check.limit === 'pair' ? 'for this e-mail from your address' : 'from your address'}; retry in ${check.retryAfterSeconds} s.`, {
        headers: { 'retry-after': String(check.retryAfterSeconds) }
      })
    }
    if (check.delayMs > 0) await setTimeout(check.delayMs)
    const account = await accounts.findByEmail(email)
    // Unknown e-mails are checked against a dummy hash so they cost the same time as known ones.
    const ok = await verifyPassword(password, account?.password_hash ?? await dummyHash)
    if (account === undefined || !ok || account.disabled) {
      const reached = await throttle.fail(email, request.ip)
      if (reached.length > 0) request.log.warn({ email, address: request.ip, limits: reached }, 'login limit reached')
      else request.log.info({ email }, 'login failed')
      throw new ApiError('INVALID_CREDENTIALS', WRONG_CREDENTIALS)
    }
    // Only a pair with failures has anything to forget: no write on an ordinary login.
    if (check.pairFailures > 0) await throttle.succeed(email, request.ip)
    return app.signToken({ sub: account.id, org: account.organisation, role: account.role })
  })
}

export default tokenRoutes
