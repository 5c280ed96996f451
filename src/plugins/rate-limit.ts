// Request rate limits via @fastify/rate-limit, with its standard headers. Runs at preParsing: after
// authentication (onRequest) and before the body is read, so an authenticated request counts against its account (shared by every
// address it comes from), one made with an API key (or a token of POST /oauth/token) against
// that key, and an unauthenticated one (POST /token) against its client address.
// With REDIS_URL the counters live in Redis (the plugin's Redis store), shared by every
// instance; when Redis does not answer, requests are let through (fail open: a rate limit is
// not worth an outage) and a warning is logged once per outage.
import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { Redis } from 'ioredis'
import type { LimitsConfig } from '../config.js'
import { ApiError } from '../errors.js'

export default fp<{ config: LimitsConfig }>(async (app, { config }) => {
  let redis: Redis | undefined
  if (config.REDIS_URL !== undefined) {
    // Loaded only when used: ioredis adds a few MB of memory to every instance that has no Redis.
    const { Redis } = await import('ioredis')
    redis = new Redis(config.REDIS_URL, {
      // Fail fast rather than queue: a command while Redis is away errors at once, and one that
      // gets no answer errors after REDIS_TIMEOUT_MS.
      enableOfflineQueue: false,
      commandTimeout: config.REDIS_TIMEOUT_MS,
      connectTimeout: config.REDIS_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => Math.min(times * 200, 2000),
      // Connected once the app is built (onReady), not while it is being built: the plugins and
      // routes registered after this one hold the event loop for seconds on a busy machine, and
      // the connect timeout, a timer, then fires before the connection's own event is read. That
      // was an outage at every start-up ("connect ETIMEDOUT", limits not enforced) whose
      // "reachable again" line told a waiting test that a later outage was over.
      lazyConnect: true
    })
    let down = false
    redis.on('error', (err: Error) => {
      if (down) return
      down = true
      app.log.warn({ err: { message: err.message } }, 'redis unreachable: rate limits are not enforced until it is back')
    })
    redis.on('ready', () => {
      if (down) app.log.warn('redis reachable again: rate limits enforced')
      down = false
    })
    const client = redis
    // Not awaited: a Redis that is away at start-up is an outage like any other (fail open,
    // warned by the error handler above, retried by retryStrategy), not a failed start.
    app.addHook('onReady', async () => { client.connect().catch(() => {}) })
    app.addHook('onClose', async () => { client.disconnect() })
  }
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
    ...(redis !== undefined ? { redis, nameSpace: 'source-registry:rate:', skipOnError: true } : {}),
    onExceeded: () => { app.metrics.rateLimited.inc() },
    keyGenerator: (request) => {
      const account = request.account
      if (account === null || account === undefined) return `ip:${request.ip}`
      return account.key !== undefined ? `key:${account.key.id}` : `account:${account.id}`
    },
    errorResponseBuilder: (_request, context) => new ApiError('TOO_MANY_REQUESTS',
      `Rate limit exceeded: at most ${context.max} requests per ${context.after}; retry in ${Math.ceil(context.ttl / 1000)} s.`)
  })
}, { name: 'rate-limit', fastify: '5.x', dependencies: ['auth', 'metrics'] })
