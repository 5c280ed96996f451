// Environment → typed, frozen Config. Validated once at start-up; a missing or malformed
// variable stops the process with one line naming it. One TypeBox object per concern (a section),
// composed into the one ConfigSchema; sections() gives each plugin and route module its own.
// Descriptions are Markdown: docs/operations.md's tables are generated from them (config-docs.ts).
import { type Static, type TObject, Type } from '@sinclair/typebox'
import envSchema from 'env-schema'
import parseDuration from 'parse-duration'
import { parseTargets, splitConnectionList } from './connection-string.js'

export const HttpEnvSchema = Type.Object({
  HOST: Type.String({ default: '127.0.0.1', minLength: 1, description: 'Address to listen on (`0.0.0.0`: every interface).' }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535, description: 'Port to listen on.' }),
  TRUST_PROXY: Type.Boolean({ default: false, description: 'Take the client address from `X-Forwarded-For` (only behind a proxy you run).' }),
  HTTP_HEADERS_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100, description: 'A connection must send a whole request head within this time: idle and slowloris connections are closed, a begun request gets 408. At most `HTTP_REQUEST_TIMEOUT_MS`.' }),
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({ default: 60000, minimum: 100, description: 'A whole request, body included, must arrive within this time (408 otherwise).' }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 100, description: 'An idle kept-alive connection is closed after this time; behind a load balancer, set it above the balancer\'s idle timeout.' }),
  HTTP_CONNECTIONS_CHECK_MS: Type.Integer({ default: 1000, minimum: 100, description: 'How often the header and request timeouts are checked (a connection lives at most this much past its timeout).' })
}, { title: 'HTTP', description: 'Listening, proxies and connection timeouts.' })

export const DatabaseEnvSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1, description: '`postgres://user:password@host:port/database` of a PostGIS server; without it the embedded PostGIS in `DATA_DIR` is used. Several hosts as libpq takes them (`postgres://u@a:5432,b:5432/db?target_session_attrs=read-write`, or `host=a,b port=5432 dbname=db target_session_attrs=read-write`): the service uses the first that fits and follows a failover to the next ([high availability](#high-availability)).' })),
  DATA_DIR: Type.String({ default: './data', minLength: 1, description: 'Embedded backend: where the database, the generated JWT secret (`jwt-secret`) and the lock live.' }),
  ADMIN_EMAIL: Type.Optional(Type.String({ minLength: 3, description: 'Embedded backend, first start: e-mail of the admin account created when there is none (unset: `admin@localhost`).' })),
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 12, description: 'Embedded backend, first start: its password (unset: generated and printed once). Needs `ADMIN_EMAIL`.' })),
  ADMIN_ORG: Type.String({ default: 'default', minLength: 1, description: 'Embedded backend, first start: the admin account\'s organisation.' }),
  EMBEDDED_SQL_PORT: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Embedded backend: also serve the database to PostgreSQL clients (psql, QGIS, DBeaver) on this port of 127.0.0.1, whatever `HOST` says, while the service runs. Whoever connects is the database\'s superuser, with no password: full read and write access. Clients share the service\'s one session, a statement at a time ([for analysts](analysts.md#on-the-embedded-default)). Unset: nothing listens. Not with `DATABASE_URL`.' })),
  DB_POOL_MAX: Type.Integer({ default: 10, minimum: 1, maximum: 200, description: 'Connection pool size per instance. Size it to the database: all instances\' pools together about 2 connections per core of the PostgreSQL host; more keeps more statements running than the cores can serve ([figures](performance.md#ogc-api-items-1000000-sources-five-runs-of-063217f-2026-11-24)).' }),
  DB_CONNECT_TIMEOUT_MS: Type.Integer({ default: 2000, minimum: 100, description: 'After this, a request waiting for a connection gets 503.' }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({ default: 30000, minimum: 100, description: 'PostgreSQL `statement_timeout` (with `DB_POOL_MODE=transaction`: the client\'s query timeout).' }),
  DB_FAST_PATH: Type.Boolean({ default: true, description: 'Batch concurrent reads and writes: once `DB_READS_IN_FLIGHT` (`DB_WRITES_IN_FLIGHT`) are running, further ones go out together as one statement (`src/sources/sources.store.ts`); `false` sends each request\'s statements alone, with the same answers.' }),
  DB_POOL_MODE: Type.Union([Type.Literal('session'), Type.Literal('transaction')], { default: 'session', description: '`session`: straight to PostgreSQL (or a session-pooling PgBouncer). `transaction`: behind a transaction-pooling PgBouncer: no named prepared statements and no startup parameters (`statement_timeout`, `TimeZone`); the statement timeout is then enforced by the client ([PgBouncer](#pgbouncer)).' }),
  DB_READS_IN_FLIGHT: Type.Integer({ default: 2, minimum: 1, maximum: 200, description: 'GET /sources queries running at once; under load, further reads wait and go out together as one query.' }),
  DB_WRITES_IN_FLIGHT: Type.Integer({ default: 2, minimum: 1, maximum: 200, description: 'POST /sources inserts running at once; under load, further requests wait and go out together as one INSERT.' }),
  DATABASE_REPLICA_URLS: Type.Optional(Type.String({ minLength: 1, description: 'Comma-separated `postgres://` URLs (or `;`-separated connection strings of either form, each may name several hosts with `target_session_attrs=standby`) of streaming replicas of `DATABASE_URL`: reads that tolerate lag (items, GET /sources/?id=, collections) go to a healthy one; writes, and reads that must see them, to the primary ([read replicas](#read-replicas)).' })),
  REPLICA_MAX_LAG_MS: Type.Integer({ default: 5000, minimum: 0, description: 'A replica further behind the primary than this, or not answering, is skipped until it catches up.' }),
  REPLICA_MAX_WAIT_MS: Type.Integer({ default: 100, minimum: 0, maximum: 10000, description: 'Read your writes: a read that must see a write waits this long for a replica to replay it, then reads the primary.' }),
  REPLICA_CHECK_MS: Type.Integer({ default: 1000, minimum: 50, description: 'How often each replica\'s state and lag are checked.' })
}, { title: 'Database', description: 'The PostGIS server or the embedded database, its pool, and read replicas.' })

export const AuthEnvSchema = Type.Object({
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'HMAC key for HS256 tokens, at least 32 bytes (`openssl rand -base64 48`). Required with `DATABASE_URL`; the embedded backend generates one into `DATA_DIR/jwt-secret`.' })),
  JWT_ISSUER: Type.String({ default: 'source-registry', minLength: 1, description: 'The tokens\' `iss` claim, checked on every request.' }),
  JWT_AUDIENCE: Type.String({ default: 'source-registry', minLength: 1, description: 'The tokens\' `aud` claim, checked on every request.' }),
  TOKEN_TTL_SECONDS: Type.Integer({ default: 3600, minimum: 60, maximum: 604800, description: 'Token lifetime (`expires_in`).' }),
  ACCOUNT_CACHE_TTL_SECONDS: Type.Integer({ default: 30, minimum: 0, maximum: 60, description: 'How long an account\'s status, and an API key\'s, is trusted without reading the database: a disabled account or a revoked key is refused on every instance within this time.' }),
  API_KEY_MAX_PER_ACCOUNT: Type.Integer({ default: 50, minimum: 1, maximum: 10000, description: 'API keys in force (neither revoked nor expired) an account may hold; POST /api-keys beyond it is a 409.' }),
  API_KEY_LAST_USED_INTERVAL_SECONDS: Type.Integer({ default: 60, minimum: 1, maximum: 86400, description: 'An API key\'s last use is written at most this often per key and instance (its `last_used_at` is that precise).' })
}, { title: 'Authentication', description: 'Tokens, the account cache and API keys.' })

export const SourcesEnvSchema = Type.Object({
  CONFLICT_POLICY: Type.Union([Type.Literal('record'), Type.Literal('reject'), Type.Literal('acknowledge')], { default: 'record', description: 'POST /sources when a new source would conflict with another: `record` (201; the conflict is a status of both) or `reject` (409 `SOURCE_OVERLAP`, nothing stored); `acknowledge` makes every POST, PUT and PATCH a claim made knowingly: one that would start conflicts with other organisations\' sources is 409 `CONFLICT_KEYS_REQUIRED` until it cites their conflict keys ([claims made knowingly](api.md#claims-made-knowingly)). A request\'s `on_conflict` overrides it.' }),
  CONFLICT_TOLERANCE_M: Type.Number({ default: 9, minimum: 0, maximum: 1000, description: 'Metres each area is shrunk inward before two overlapping areas conflict (0: any overlap of positive area). It lives in the database (`source_conflict_settings`): `make migrate` (and the embedded backend at start) applies it and, when it changed, computes every pair again; a service on a PostGIS server whose database holds another value refuses to start, naming both. Give every instance and `make migrate` the same value.' }),
  MAX_FEATURES: Type.Integer({ default: 1000, minimum: 1, maximum: 100000, description: 'Features a POST may create at once (a larger collection is a 400).' }),
  ITEMS_ROWS_PER_QUERY: Type.Integer({ default: 500, minimum: 1, maximum: 10000, description: 'OGC API items: a page up to this many rows is read in one query; a larger one is streamed in chunks of about 128 KB (at most this many rows each), so memory per request stays bounded whatever `limit` is.' }),
  ITEMS_COUNT_MAX: Type.Integer({ default: 100000, minimum: 0, maximum: 10000000, description: 'OGC API items: `numberMatched` is counted on a first page up to this many matches and left out beyond.' }),
  CRS_EPSG: Type.String({ default: '3857,3035,28992,25832,25833,27700,2154', pattern: '^\\d{4,6}(,\\d{4,6})*$', description: 'EPSG codes of the coordinate reference systems served besides CRS84 and EPSG:4326 (OGC API – Features Part 2): reads take `crs=`, `bbox-crs=`, writes `Content-Crs`. Each must be in PostGIS\'s `spatial_ref_sys`; its axis order and area of use are the EPSG data\'s ([CRS](api.md#coordinate-reference-systems)).' })
}, { title: 'Sources and features', description: 'Conflicts between sources, features per POST, OGC API items pages and the CRSs served.' })

export const TilesEnvSchema = Type.Object({
  TILES_MAX_FEATURES: Type.Integer({ default: 10000, minimum: 100, maximum: 1000000, description: 'Vector tiles: at most this many features a tile, the largest first (small sources are merged into marks first).' }),
  TILES_MAX_BYTES: Type.Integer({ default: 512000, minimum: 10000, description: 'Vector tiles: a tile over this many bytes is drawn again with half the features, down to 100.' }),
  TILES_MAX_AGE_SECONDS: Type.Integer({ default: 10, minimum: 0, maximum: 3600, description: 'Vector tiles: `Cache-Control: private, max-age`; after it a client revalidates with its ETag (304).' }),
  TILES_CONCURRENCY: Type.Integer({ default: 4, minimum: 1, maximum: 200, description: 'Vector tiles drawn at once per instance (never more than `DB_POOL_MAX` − 1, so other requests always find a connection); the others wait in order without holding a connection. A zoomed-out tile costs the database up to seconds: about one per core of PostgreSQL is right.' }),
  TILES_QUEUE: Type.Integer({ default: 256, minimum: 0, description: 'Vector tiles that may wait to be drawn; beyond, 503 with `Retry-After: 1`.' }),
  TILES_CACHE_BYTES: Type.Integer({ default: 16777216, minimum: 0, description: 'Vector tiles: bytes of drawn tiles kept in memory per instance (least recently used out first), each with the change counters of its ETag; a tile asked again by anyone of the same scope and filter is served from memory while no write touched it, on any instance (the counters are read from the database on every request). 0: no cache.' })
}, { title: 'Vector tiles', description: 'OGC API – Tiles (`/collections/sources/tiles`).' })

export const MapEnvSchema = Type.Object({
  MAP_TILE_URL: Type.String({ default: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png', pattern: '^(none|https?://[^/]+/.*)$', description: 'The map page\'s basemap, an `http(s)://` URL (`{z}/{x}/{y}`, optionally `{s}`) whose origin the CSP allows; `none`: no basemap, a graticule on a plain background, no request leaves the service.' }),
  MAP_TILE_ATTRIBUTION: Type.String({ default: '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors', description: 'The basemap\'s attribution (HTML, shown as Leaflet shows attributions).' })
}, { title: 'Map page', description: 'The page at `/map`.' })

export const EventsEnvSchema = Type.Object({
  EVENTS_LISTEN_URL: Type.Optional(Type.String({ minLength: 1, description: 'A **direct** `postgres://` connection (several hosts as in `DATABASE_URL` allowed) (not through a transaction-pooling PgBouncer) on which each instance LISTENs for new events, so SSE streams and webhooks learn of them at commit. Unset: each instance polls every `EVENTS_POLL_MS` ([events](#events-listen-and-pgbouncer)). Needs `DATABASE_URL`.' })),
  EVENTS_POLL_MS: Type.Integer({ default: 500, minimum: 20, maximum: 60000, description: 'How often each instance looks for new events when it does not LISTEN (with `EVENTS_LISTEN_URL`: a fallback every 10 × this).' }),
  EVENTS_HEARTBEAT_MS: Type.Integer({ default: 15000, minimum: 100, maximum: 15000, description: 'An SSE stream sends a comment at least this often, so proxies keep it open.' }),
  EVENTS_RETENTION: Type.String({ default: '30d', minLength: 2, description: 'Events older than this are removed in the background, in small batches (`30d`, `12h`, `90s`, `1h 30m`; at least `1s`); a feed cursor or `Last-Event-ID` from before the oldest kept event gets 410 ([retention](#event-retention)). An event an active webhook subscription has not yet received is kept.' }),
  EVENTS_RETENTION_BATCH: Type.Integer({ default: 1000, minimum: 1, maximum: 100000, description: 'Events removed per transaction by the retention; batches follow one another until nothing expired is left.' }),
  EVENTS_RETENTION_CHECK_MS: Type.Integer({ default: 60000, minimum: 100, description: 'How often each instance looks for expired events (one instance removes at a time: an advisory lock).' }),
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({ default: false, description: 'Allow webhook URLs on `http` and on loopback, private, link-local and metadata addresses: development and tests only.' }),
  WEBHOOK_RETRY_FOR: Type.Integer({ default: 86400, minimum: 1, description: 'Seconds a subscription\'s deliveries are retried (exponential backoff with jitter) before it is marked `failing`; it is still retried then, every hour at most.' }),
  WEBHOOK_RETRY_BASE_MS: Type.Integer({ default: 5000, minimum: 10, description: 'The first retry\'s delay; each further one doubles it (up to an hour), with jitter.' }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100, maximum: 60000, description: 'A receiver must answer within this time, or the delivery is retried.' }),
  WEBHOOK_CONCURRENCY: Type.Integer({ default: 4, minimum: 1, maximum: 100, description: 'Subscriptions each instance delivers to at once (each one in order).' }),
  WEBHOOK_LEASE_MS: Type.Integer({ default: 60000, minimum: 1000, description: 'How long an instance holds a subscription it delivers (at least 2 × `WEBHOOK_TIMEOUT_MS`); a killed instance\'s subscriptions are taken over after this.' }),
  WATCH_MAX_AREA_KM2: Type.Number({ default: 10000, exclusiveMinimum: 0, maximum: 510000000, description: 'The largest area a watch (POST /watches) may cover, in km² on the WGS 84 ellipsoid; a larger one is a 422 naming this limit.' }),
  WEBHOOK_MAX_PER_ORG: Type.Integer({ default: 20, minimum: 1, maximum: 10000, description: 'Webhook subscriptions an organisation may hold; POST /subscriptions beyond it is a 409.' })
}, { title: 'Events and webhooks', description: 'The feed, SSE streams and webhook deliveries.' })

export const LimitsEnvSchema = Type.Object({
  BODY_LIMIT_BYTES: Type.Integer({ default: 10485760, minimum: 1024, description: 'Request body limit (413 above).' }),
  LARGE_BODY_BYTES: Type.Integer({ default: 65536, minimum: 0, description: 'POST /sources bodies over this size (or of unknown size) are admitted `LARGE_BODY_CONCURRENCY` at a time.' }),
  LARGE_BODY_CONCURRENCY: Type.Integer({ default: 4, minimum: 1, description: 'Large bodies read and processed at once; the rest wait before their body is read.' }),
  LARGE_BODY_QUEUE: Type.Integer({ default: 64, minimum: 0, description: 'Large bodies that may wait; beyond, 503 with `Retry-After: 1`.' }),
  RATE_LIMIT_MAX: Type.Integer({ default: 1200, minimum: 1, description: 'Requests per account (or per address when unauthenticated) per window.' }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ default: 60, minimum: 1, description: 'The rate limit\'s window.' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', description: '`redis://host:port` (or `rediss://`): rate-limit counters shared by every instance. Unset: each process counts alone.' })),
  REDIS_TIMEOUT_MS: Type.Integer({ default: 500, minimum: 10, description: 'A rate-limit check waits this long for Redis; then the request is let through (fail open) and a warning logged.' }),
  LOGIN_MAX_FAILURES: Type.Integer({ default: 5, minimum: 1, description: 'Failed logins per (address, e-mail) pair per window before that pair gets 429.' }),
  LOGIN_ADDRESS_MAX_FAILURES: Type.Integer({ default: 20, minimum: 1, description: 'Failed logins per address (any e-mail) per window before that address gets 429.' }),
  LOGIN_EMAIL_SLOWDOWN_AFTER: Type.Integer({ default: 10, minimum: 1, description: 'Failed logins per e-mail (any address) per window after which every login for it is slowed, never refused.' }),
  LOGIN_EMAIL_MAX_DELAY_MS: Type.Integer({ default: 10000, minimum: 0, description: 'The slowdown starts at 250 ms and doubles per further failure up to this.' }),
  LOGIN_FAILURE_WINDOW_SECONDS: Type.Integer({ default: 900, minimum: 1, description: 'The window failed logins are counted in.' })
}, { title: 'Limits', description: 'Request bodies, rate limits and the login throttle.' })

export const OpsEnvSchema = Type.Object({
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info', description: 'pino log level; `silent` to turn logging off.' }),
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, description: 'Serve GET /metrics (Prometheus) on the service\'s port to requests bearing this token.' })),
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Serve GET /metrics (Prometheus), without a token, on this port of `HOST` instead; keep it off the public network. Without it and `METRICS_TOKEN` there are no metrics.' }))
}, { title: 'Logs and metrics', description: 'What the service tells its operators ([metrics](#metrics)).' })

/** The sections, in the order docs/operations.md lists them. */
export const ConfigSections = {
  http: HttpEnvSchema,
  database: DatabaseEnvSchema,
  auth: AuthEnvSchema,
  sources: SourcesEnvSchema,
  tiles: TilesEnvSchema,
  map: MapEnvSchema,
  events: EventsEnvSchema,
  limits: LimitsEnvSchema,
  ops: OpsEnvSchema
} satisfies Record<string, TObject>

export const ConfigSchema = Type.Object({
  ...HttpEnvSchema.properties,
  ...DatabaseEnvSchema.properties,
  ...AuthEnvSchema.properties,
  ...SourcesEnvSchema.properties,
  ...TilesEnvSchema.properties,
  ...MapEnvSchema.properties,
  ...EventsEnvSchema.properties,
  ...LimitsEnvSchema.properties,
  ...OpsEnvSchema.properties
})

export type Config = Readonly<Static<typeof ConfigSchema>>
/** What the app needs: a config whose JWT secret is known (given, or generated by the embedded backend: bootstrap.ts). */
export type AppConfig = Config & { readonly JWT_SECRET: string }

export type SectionName = keyof typeof ConfigSections
/** Each section of `C`: only the variables its schema defines. */
export type Sections<C extends Config = AppConfig> = {
  readonly [S in SectionName]: Readonly<Pick<C, keyof Static<(typeof ConfigSections)[S]> & keyof C>>
}
export type HttpConfig = Sections['http']
export type DatabaseConfig = Sections['database']
export type AuthConfig = Sections['auth']
export type SourcesConfig = Sections['sources']
export type TilesConfig = Sections['tiles']
export type MapConfig = Sections['map']
export type EventsConfig = Sections['events']
export type LimitsConfig = Sections['limits']
export type OpsConfig = Sections['ops']

/** `config` cut into its sections, each frozen and holding its own variables alone. */
export function sections<C extends Config> (config: C): Sections<C> {
  const cut = (schema: TObject) => Object.freeze(Object.fromEntries(Object.keys(schema.properties)
    .filter((key) => (config as Record<string, unknown>)[key] !== undefined)
    .map((key) => [key, (config as Record<string, unknown>)[key]])))
  return Object.freeze(Object.fromEntries(Object.entries(ConfigSections).map(([name, schema]) => [name, cut(schema)]))) as Sections<C>
}

/** A duration variable in milliseconds (`30d`, `90s`, `1h 30m`: parse-duration); undefined when it is not one. */
export function durationMs (text: string): number | undefined {
  if (!/^\s*\d/.test(text) || !/[a-zµ]\s*$/i.test(text)) return undefined
  const ms = parseDuration(text)
  return ms === null || !Number.isFinite(ms) ? undefined : ms
}

/** A configuration that cannot work; its message is one line naming the variable. */
export class ConfigError extends Error {}

/**
 * Reads and validates `env` (the service and the CLI alike); throws a ConfigError whose message
 * is one line naming the bad variable. An empty variable (`JWT_SECRET=` in a copied
 * .env.example) counts as unset; variables the schema does not name are ignored. What only the
 * service needs (a JWT secret with DATABASE_URL) is checked by bootstrap.ts.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  try {
    const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
    const config = envSchema<Static<typeof ConfigSchema>>({ schema: structuredClone(ConfigSchema), data, env: false })
    if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
      throw new Error('env HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS')
    }
    if (config.DATABASE_REPLICA_URLS !== undefined && config.DATABASE_URL === undefined) {
      throw new Error('env DATABASE_REPLICA_URLS is set without DATABASE_URL (replicas are of a PostGIS server)')
    }
    const connectionStrings: Array<[string, string | undefined]> = [
      ['DATABASE_URL', config.DATABASE_URL], ['EVENTS_LISTEN_URL', config.EVENTS_LISTEN_URL],
      ...splitConnectionList(config.DATABASE_REPLICA_URLS ?? '').map((u): [string, string] => ['DATABASE_REPLICA_URLS', u])
    ]
    for (const [name, value] of connectionStrings) {
      if (value === undefined) continue
      try {
        parseTargets(value)
      } catch (err) {
        throw new Error(`env ${name}: ${(err as Error).message}`)
      }
    }
    if (config.METRICS_PORT !== undefined && config.METRICS_PORT === config.PORT) {
      throw new Error('env METRICS_PORT must differ from PORT')
    }
    if (config.EMBEDDED_SQL_PORT !== undefined && config.DATABASE_URL !== undefined) {
      throw new Error('env EMBEDDED_SQL_PORT is set with DATABASE_URL (it serves the embedded database; connect to the PostGIS server itself)')
    }
    if (config.EMBEDDED_SQL_PORT !== undefined && (config.EMBEDDED_SQL_PORT === config.PORT || config.EMBEDDED_SQL_PORT === config.METRICS_PORT)) {
      throw new Error('env EMBEDDED_SQL_PORT must differ from PORT and METRICS_PORT')
    }
    if (config.EVENTS_LISTEN_URL !== undefined && config.DATABASE_URL === undefined) {
      throw new Error('env EVENTS_LISTEN_URL is set without DATABASE_URL (the embedded database has no other connection to listen on)')
    }
    if (config.WEBHOOK_LEASE_MS < 2 * config.WEBHOOK_TIMEOUT_MS) {
      throw new Error('env WEBHOOK_LEASE_MS must be at least twice WEBHOOK_TIMEOUT_MS (a lease outlives the deliveries made under it)')
    }
    const retention = durationMs(config.EVENTS_RETENTION)
    if (retention === undefined || retention < 1000) {
      throw new Error(`env EVENTS_RETENTION must be a duration of at least 1s with its unit (30d, 12h, 90s), not "${config.EVENTS_RETENTION}"`)
    }
    if (config.ADMIN_PASSWORD !== undefined && config.ADMIN_EMAIL === undefined) {
      throw new Error('env ADMIN_PASSWORD is set without ADMIN_EMAIL')
    }
    return Object.freeze(config)
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message.replace(/\n/g, '; ')}`)
  }
}
