// POST /token: e-mail and password → a bearer token.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Config } from '../config.js'
import { ApiError, errorResponses } from '../errors.js'
import { findAccountByEmail } from './accounts.repository.js'
import { LoginThrottle } from './login-throttle.js'
import { dummyHash, verifyPassword } from './passwords.js'

export const CredentialsSchema = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
})

export const TokenSchema = Type.Object({
  token: Type.String(),
  expires_in: Type.Integer({ description: 'Seconds until the token expires.' })
})

const WRONG_CREDENTIALS = 'Wrong e-mail or password.'

const tokenRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const throttle = new LoginThrottle(config.LOGIN_MAX_FAILURES, config.LOGIN_FAILURE_WINDOW_SECONDS * 1000)

  app.post('/token', {
    schema: {
      summary: 'Obtain a bearer token',
      body: CredentialsSchema,
      response: { 200: TokenSchema, ...errorResponses(400, 401, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    const { email, password } = request.body
    const keys = [`email:${email.toLowerCase()}`, `ip:${request.ip}`]
    const wait = throttle.retryAfter(keys)
    if (wait > 0) {
      throw new ApiError('TOO_MANY_REQUESTS', `Too many failed logins; retry in ${wait} s.`, { headers: { 'retry-after': String(wait) } })
    }
    const account = await findAccountByEmail(app.db, email)
    // Unknown e-mails are checked against a dummy hash so they cost the same time as known ones.
    const ok = await verifyPassword(password, account?.password_hash ?? await dummyHash)
    if (account === undefined || !ok || account.disabled) {
      throttle.fail(keys)
      request.log.info({ email }, 'login failed')
      throw new ApiError('INVALID_CREDENTIALS', WRONG_CREDENTIALS)
    }
    throttle.succeed(keys[0] as string)
    return app.signToken({ sub: account.id, org: account.organisation, role: account.role })
  })
}

export default tokenRoutes
