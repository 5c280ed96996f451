// buildApp(config) → a ready FastifyInstance. Never listens: server.ts does, tests inject.
// Registration order: infrastructure plugins, shared services, then routes.
import Fastify, { type FastifyBaseLogger } from 'fastify'
import accepts from '@fastify/accepts'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Kysely } from 'kysely'
import { randomUUID } from 'node:crypto'
import type { AppConfig } from './config.js'
import type { Database } from './db/database.js'
import { ApiError, ErrorBodySchemas } from './errors.js'
import { MAX_PATH_PARAM_LENGTH, clientErrorHandler, errorHandler } from './http/error-handler.js'
import { collectRouteMethods } from './http/method-not-allowed.js'
import { swaggerOptions } from './http/openapi.js'
import openApiRoutes from './http/openapi.routes.js'
import { fastSourceStore } from './fast/sources-store.js'
import { plainSourceStore } from './sources/sources.store.js'
import dbPlugin from './plugins/db.js'
import authPlugin from './plugins/auth.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import largeBodiesPlugin from './plugins/large-bodies.js'
import securityHeaders from './plugins/security-headers.js'
import { accountStore } from './accounts/accounts.store.js'
import { apiKeyStore } from './accounts/api-keys.store.js'
import { LoginThrottle } from './accounts/login-throttle.js'
import { healthStore } from './ops/health.store.js'
import { createMetrics } from './ops/metrics.js'
import { countedSourceStore } from './ops/counted-store.js'
import { replicaSourceStore } from './ops/replica-store.js'
import metricsPlugin from './plugins/metrics.js'
import replicasPlugin, { openReplicas } from './plugins/replicas.js'
import healthRoutes from './ops/health.routes.js'
import tokenRoutes from './accounts/token.routes.js'
import oauthRoutes from './accounts/oauth.routes.js'
import apiKeysRoutes from './accounts/api-keys.routes.js'
import sourcesRoutes from './sources/sources.routes.js'
import featuresRoutes from './features/features.routes.js'
import tilesRoutes, { TILES_CONFORMANCE } from './tiles/tiles.routes.js'
import { AdmissionQueue } from './http/admission-queue.js'
import { plainTileStore } from './tiles/tiles.store.js'
import mapRoutes, { tileOrigin } from './map/map.routes.js'
import { cursorCodec } from './events/cursor.js'
import { Deliverer } from './events/deliverer.js'
import { eventStore } from './events/events.store.js'
import { EventHub } from './events/hub.js'
import eventsRoutes from './events/events.routes.js'
import subscriptionsRoutes from './events/subscriptions.routes.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export interface AppOptions {
  config: AppConfig
  /** The open database (db/open.ts); the app destroys it when it closes. */
  db: Kysely<Database>
  /** A pino logger (server.ts); without one the app does not log. */
  loggerInstance?: FastifyBaseLogger
}

export async function buildApp ({ config, db, loggerInstance }: AppOptions) {
  const app = Fastify({
    ...(loggerInstance !== undefined ? { loggerInstance } : { logger: false }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    // A client's own X-Request-ID is kept when it is well-formed, so both sides quote one id.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    // Node's defaults (60 s for a request head, checked every 30 s) held idle and slowloris
    // connections for up to ~90 s.
    http: { headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: config.HTTP_CONNECTIONS_CHECK_MS },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    // The router's own errors (a path that is not percent-encoded UTF-8: 400; a path segment over
    // its maxParamLength: 414) and Node's (431, 408, not HTTP) in the one error shape.
    frameworkErrors: errorHandler,
    clientErrorHandler: clientErrorHandler({ headersMs: config.HTTP_HEADERS_TIMEOUT_MS, requestMs: config.HTTP_REQUEST_TIMEOUT_MS }),
    // No type coercion: "1" is not a number and 1 is not a string in a GeoJSON body.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  // JSON only: without its default text/plain parser, any other media type is a 415.
  app.removeContentTypeParser('text/plain')
  app.addHook('onRequest', async (request, reply) => { void reply.header('x-request-id', request.id) })
  app.setErrorHandler(errorHandler)
  const methodsServed = collectRouteMethods(app)
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = methodsServed(path)
    // A method the path is served with that still lands here (a file @fastify/static does not
    // have) is a 404, not a 405 whose Allow names the method asked.
    errorHandler(allowed.length > 0 && !allowed.includes(request.method)
      ? new ApiError('METHOD_NOT_ALLOWED', `${request.method} is not served on ${path}: use ${allowed.join(', ')}.`, { headers: { allow: allowed.join(', ') } })
      : new ApiError('NOT_FOUND', `No route ${request.method} ${path}.`), request, reply)
  })

  // Before every route, so that the document lists them all (GET /metrics included).
  await app.register(swagger, swaggerOptions)
  // Before the routes, which refer to them (errorResponses).
  for (const schema of ErrorBodySchemas) app.addSchema(schema)
  // Before the routes, so that every route is timed (when metrics are on: METRICS_TOKEN or METRICS_PORT).
  const metrics = createMetrics()
  metrics.addPool('primary', db)
  await app.register(metricsPlugin, { config, metrics })
  // Security headers on every response; images also from the basemap's tile server.
  await app.register(securityHeaders, { tileOrigin: tileOrigin(config.MAP_TILE_URL) })
  await app.register(accepts)
  // One store per resource: the routes and the auth plugin reach storage through these alone.
  const accounts = accountStore(db)
  const apiKeys = apiKeyStore(db)
  // Failed logins and wrong API keys, counted in the database (shared by every instance).
  const throttle = new LoginThrottle(accounts.failures, {
    pairMaxFailures: config.LOGIN_MAX_FAILURES,
    addressMaxFailures: config.LOGIN_ADDRESS_MAX_FAILURES,
    emailSlowdownAfter: config.LOGIN_EMAIL_SLOWDOWN_AFTER,
    emailMaxDelayMs: config.LOGIN_EMAIL_MAX_DELAY_MS,
    windowSeconds: config.LOGIN_FAILURE_WINDOW_SECONDS
  })
  // The plain path, or the same answers with batching and compiled queries (src/fast/); with
  // DATABASE_REPLICA_URLS, one per replica too, reads routed among them (ops/replica-store.ts).
  const storeOn = (on: Kysely<Database>) => config.DB_FAST_PATH
    ? fastSourceStore(on, { readsInFlight: config.DB_READS_IN_FLIGHT, writesInFlight: config.DB_WRITES_IN_FLIGHT, maxFeatures: config.MAX_FEATURES })
    : plainSourceStore(on)
  const replicas = await openReplicas(config, db, metrics, app.log)
  const sources = countedSourceStore(replicas === undefined ? storeOn(db) : replicaSourceStore(storeOn(db), replicas, (r) => storeOn(r.db)), metrics)

  await app.register(dbPlugin, { db })
  await app.register(authPlugin, { config, accounts, keys: apiKeys, throttle })
  await app.register(rateLimitPlugin, { config })
  await app.register(largeBodiesPlugin, { config })
  await app.register(replicasPlugin, { replicas })

  await app.register(healthRoutes, { health: healthStore(db), replicas: replicas === undefined ? undefined : () => replicas.states() })
  await app.register(tokenRoutes, { accounts, throttle })
  await app.register(oauthRoutes, { config })
  await app.register(apiKeysRoutes, { config, keys: apiKeys })
  await app.register(sourcesRoutes, { config, store: sources })
  await app.register(featuresRoutes, { config, store: sources, rowsPerQuery: config.ITEMS_ROWS_PER_QUERY, countMax: config.ITEMS_COUNT_MAX, conformance: TILES_CONFORMANCE })
  await app.register(tilesRoutes, {
    store: plainTileStore(db, { maxBytes: config.TILES_MAX_BYTES }),
    maxFeatures: config.TILES_MAX_FEATURES,
    maxBytes: config.TILES_MAX_BYTES,
    maxAgeSeconds: config.TILES_MAX_AGE_SECONDS,
    drawing: new AdmissionQueue(Math.max(1, Math.min(config.TILES_CONCURRENCY, config.DB_POOL_MAX - 1)), config.TILES_QUEUE)
  })
  await app.register(mapRoutes, { config })
  // Events: the hub watches the feed for this instance's streams and deliverer, which start once
  // the app is ready and stop when it closes.
  const events = eventStore(db)
  const hub = new EventHub(events, { pollMs: config.EVENTS_POLL_MS, listenUrl: config.EVENTS_LISTEN_URL, log: app.log })
  const deliverer = new Deliverer(events, hub, {
    concurrency: config.WEBHOOK_CONCURRENCY,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    leaseMs: config.WEBHOOK_LEASE_MS,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    retryForSeconds: config.WEBHOOK_RETRY_FOR,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    log: app.log
  })
  await app.register(eventsRoutes, { config, store: events, hub, cursors: cursorCodec(config.JWT_SECRET) })
  await app.register(subscriptionsRoutes, { config, store: events })
  app.addHook('onReady', async () => { hub.start(); deliverer.start() })
  app.addHook('preClose', async () => { await deliverer.close(); await hub.close() })
  await app.register(openApiRoutes)

  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
