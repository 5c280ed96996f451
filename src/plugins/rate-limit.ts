// Request rate limits via @fastify/rate-limit, with its standard headers. Runs at preParsing: after
// authentication (onRequest) and before the body is read, so an authenticated request counts against its account (shared by every
// address it comes from) and an unauthenticated one (POST /token) against its client address.
import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { Config } from '../config.js'
import { ApiError } from '../errors.js'

export default fp<{ config: Config }>(async (app, { config }) => {
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
    keyGenerator: (request) => request.account?.id !== undefined ? `account:${request.account.id}` : `ip:${request.ip}`,
    errorResponseBuilder: (_request, context) => new ApiError('TOO_MANY_REQUESTS',
      `Rate limit exceeded: at most ${context.max} requests per ${context.after}; retry in ${Math.ceil(context.ttl / 1000)} s.`)
  })
}, { name: 'rate-limit', fastify: '5.x', dependencies: ['auth'] })
