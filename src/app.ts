// buildApp(config) → a ready FastifyInstance. Never listens: server.ts does, tests inject.
// Registration order: infrastructure plugins, shared services, then routes.
import Fastify, { type FastifyBaseLogger } from 'fastify'
import accepts from '@fastify/accepts'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Kysely } from 'kysely'
import { randomUUID } from 'node:crypto'
import { type AppConfig, durationMs, sections } from './config.js'
import type { Database } from './db/database.js'
import { ApiError, ErrorBodySchemas } from './errors.js'
import { MAX_PATH_PARAM_LENGTH, clientErrorHandler, errorHandler } from './http/error-handler.js'
import { endLingering } from './http/lingering-close.js'
import { collectRouteMethods } from './http/method-not-allowed.js'
import { swaggerOptions } from './http/openapi.js'
import openApiRoutes from './http/openapi.routes.js'
import { AJV_OPTIONS } from './http/validation.js'
import { lazyCompilersFactory } from './http/lazy-compilers.js'
import { sourceStore } from './sources/sources.store.js'
import { attributeSchemaStore } from './sources/attribute-schemas.store.js'
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
import attributeSchemasRoutes from './sources/attribute-schemas.routes.js'
import featuresRoutes from './features/features.routes.js'
import { crsCatalogue } from './sources/crs.js'
import tilesRoutes, { TILES_CONFORMANCE } from './tiles/tiles.routes.js'
import { AdmissionQueue } from './http/admission-queue.js'
import { cachedTileStore, plainTileStore } from './tiles/tiles.store.js'
import mapRoutes, { tileOrigin } from './map/map.routes.js'
import { cursorCodec } from './events/cursor.js'
import { Deliverer } from './events/deliverer.js'
import { eventStore } from './events/events.store.js'
import { EventHub } from './events/hub.js'
import { EventRetention } from './events/retention.js'
import eventsRoutes from './events/events.routes.js'
import subscriptionsRoutes from './events/subscriptions.routes.js'
import { conflictStore } from './conflicts/conflicts.store.js'
import conflictsRoutes from './conflicts/conflicts.routes.js'
import { watchStore } from './watches/watches.store.js'
import watchesRoutes from './watches/watches.routes.js'
import { CONFLICT_QUERYABLES } from './conflicts/conflicts.schema.js'
import { checkFilter } from './features/filters/cql2.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export interface AppOptions {
  config: AppConfig
  /** The open database (db/open.ts); the app destroys it when it closes. */
  db: Kysely<Database>
  /** A pino logger (server.ts); without one the app does not log. */
  loggerInstance?: FastifyBaseLogger
}

export async function buildApp ({ config, db, loggerInstance }: AppOptions) {
  // Each plugin and route module is given its own section of the configuration.
  const section = sections(config)
  const app = Fastify({
    ...(loggerInstance !== undefined ? { loggerInstance } : { logger: false }),
    bodyLimit: section.limits.BODY_LIMIT_BYTES,
    trustProxy: section.http.TRUST_PROXY,
    // A client's own X-Request-ID is kept when it is well-formed, so both sides quote one id.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestTimeout: section.http.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: section.http.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    // Node's defaults (60 s for a request head, checked every 30 s) held idle and slowloris
    // connections for up to ~90 s.
    http: { headersTimeout: section.http.HTTP_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: section.http.HTTP_CONNECTIONS_CHECK_MS },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    // The router's own errors (a path that is not percent-encoded UTF-8: 400; a path segment over
    // its maxParamLength: 414) and Node's (431, 408, not HTTP) in the one error shape.
    frameworkErrors: errorHandler,
    clientErrorHandler: clientErrorHandler({ headersMs: section.http.HTTP_HEADERS_TIMEOUT_MS, requestMs: section.http.HTTP_REQUEST_TIMEOUT_MS }),
    // No coercion, the Polygon/MultiPolygon discriminator, verbose issues: http/validation.ts.
    ajv: { customOptions: { ...AJV_OPTIONS } },
    schemaController: { compilersFactory: lazyCompilersFactory }
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
  await app.register(metricsPlugin, { config: section.ops, metrics })
  // Security headers on every response; images also from the basemap's tile server.
  await app.register(securityHeaders, { tileOrigin: tileOrigin(section.map.MAP_TILE_URL) })
  await app.register(accepts)
  // One store per resource: the routes and the auth plugin reach storage through these alone.
  const accounts = accountStore(db)
  const apiKeys = apiKeyStore(db)
  // Failed logins and wrong API keys, counted in the database (shared by every instance).
  const throttle = new LoginThrottle(accounts.failures, {
    pairMaxFailures: section.limits.LOGIN_MAX_FAILURES,
    addressMaxFailures: section.limits.LOGIN_ADDRESS_MAX_FAILURES,
    emailSlowdownAfter: section.limits.LOGIN_EMAIL_SLOWDOWN_AFTER,
    emailMaxDelayMs: section.limits.LOGIN_EMAIL_MAX_DELAY_MS,
    windowSeconds: section.limits.LOGIN_FAILURE_WINDOW_SECONDS
  })
  // One store per database, batching concurrent requests unless DB_FAST_PATH is off; with
  // DATABASE_REPLICA_URLS, one per replica too, reads routed among them (ops/replica-store.ts).
  const { DB_FAST_PATH, DB_READS_IN_FLIGHT, DB_WRITES_IN_FLIGHT } = section.database
  const batching = DB_FAST_PATH ? { readsInFlight: DB_READS_IN_FLIGHT, writesInFlight: DB_WRITES_IN_FLIGHT, maxFeatures: section.sources.MAX_FEATURES } : undefined
  const storeOn = (on: Kysely<Database>) => sourceStore(on, batching)
  const replicas = await openReplicas(section.database, db, metrics, app.log)
  const sources = countedSourceStore(replicas === undefined ? storeOn(db) : replicaSourceStore(storeOn(db), replicas, (r) => storeOn(r.db)), metrics)

  await app.register(dbPlugin, { db })
  await app.register(authPlugin, { config: section.auth, accounts, keys: apiKeys, throttle })
  await app.register(rateLimitPlugin, { config: section.limits })
  await app.register(largeBodiesPlugin, { config: section.limits })
  await app.register(replicasPlugin, { replicas })

  await app.register(healthRoutes, { health: healthStore(db), replicas: replicas === undefined ? undefined : () => replicas.states() })
  await app.register(tokenRoutes, { accounts, throttle })
  await app.register(oauthRoutes, { config: section.auth })
  await app.register(apiKeysRoutes, { config: section.auth, keys: apiKeys })
  // The organisations' attribute schemas; CREATE INDEX CONCURRENTLY keeps writes going on a server (PGlite has one session anyway).
  const schemas = attributeSchemaStore(db, { concurrentIndexes: section.database.DATABASE_URL !== undefined })
  // The CRSs served (OGC API – Features Part 2): CRS84, EPSG:4326 and CRS_EPSG.
  const catalogue = crsCatalogue(section.sources.CRS_EPSG.split(',').map(Number))
  await app.register(sourcesRoutes, { config: section.sources, store: sources, schemas, catalogue })
  await app.register(attributeSchemasRoutes, { schemas })
  await app.register(featuresRoutes, { config: section.sources, store: sources, schemas, conformance: TILES_CONFORMANCE, catalogue })
  const drawnTiles = plainTileStore(db, { maxBytes: section.tiles.TILES_MAX_BYTES, extent: async (scope) => (await sources.extent(scope)).bbox, readsInFlight: batching?.readsInFlight })
  const tileStore = section.tiles.TILES_CACHE_BYTES === 0
    ? drawnTiles
    : cachedTileStore(drawnTiles, { maxBytes: section.tiles.TILES_CACHE_BYTES, lookups: metrics.tileCacheLookups, onCache: metrics.addTileCache })
  await app.register(tilesRoutes, {
    config: section.tiles,
    store: tileStore,
    // A connection is always left for other requests.
    drawing: new AdmissionQueue(Math.max(1, Math.min(section.tiles.TILES_CONCURRENCY, section.database.DB_POOL_MAX - 1)), section.tiles.TILES_QUEUE)
  })
  await app.register(conflictsRoutes, { store: conflictStore(db), sources, checkFilter: (filter, lang) => checkFilter(filter, lang, new Map(), CONFLICT_QUERYABLES) })
  await app.register(watchesRoutes, { config: section.events, store: watchStore(db) })
  await app.register(mapRoutes, { config: section.map })
  // Events: the hub watches the feed for this instance's streams and deliverer, which start once
  // the app is ready and stop when it closes.
  const events = eventStore(db)
  const hub = new EventHub(events, { pollMs: section.events.EVENTS_POLL_MS, listenUrl: section.events.EVENTS_LISTEN_URL, log: app.log })
  const deliverer = new Deliverer(events, hub, {
    concurrency: section.events.WEBHOOK_CONCURRENCY,
    timeoutMs: section.events.WEBHOOK_TIMEOUT_MS,
    leaseMs: section.events.WEBHOOK_LEASE_MS,
    retryBaseMs: section.events.WEBHOOK_RETRY_BASE_MS,
    retryForSeconds: section.events.WEBHOOK_RETRY_FOR,
    allowPrivate: section.events.WEBHOOK_ALLOW_PRIVATE,
    log: app.log
  })
  const retentionMs = durationMs(section.events.EVENTS_RETENTION)
  if (retentionMs === undefined) throw new Error(`EVENTS_RETENTION is not a duration: ${section.events.EVENTS_RETENTION}`)
  const retention = new EventRetention(events, {
    retentionMs,
    batch: section.events.EVENTS_RETENTION_BATCH,
    checkMs: section.events.EVENTS_RETENTION_CHECK_MS,
    vacuum: section.database.DATABASE_URL === undefined,
    log: app.log
  })
  await app.register(eventsRoutes, { config: section.events, store: events, hub, cursors: cursorCodec(section.auth.JWT_SECRET) })
  await app.register(subscriptionsRoutes, { config: section.events, store: events })
  app.addHook('onReady', async () => { hub.start(); deliverer.start(); retention.start() })
  app.addHook('preClose', async () => { endLingering(app.server); await retention.close(); await deliverer.close(); await hub.close() })
  await app.register(openApiRoutes)

  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
