// Prometheus metrics (prom-client), one registry per app: HTTP requests by route pattern, method
// and status; the database pools; statement timeouts; rate-limit and login-throttle refusals;
// conflict pairs recorded; the tile cache's lookups and size; the replicas (ops/replicas.ts registers its own); Node's default
// process metrics. Labels never carry an id: a route is its pattern (/collections/sources/items/:id),
// a request no route matched is "unmatched".
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/database.js'
import { failoverOf, poolOf } from '../db/connect.js'

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** A request's method as a label: one of HTTP's usual ones, or "other" (a client may send any token). */
export const methodLabel = (method: string): string => METHODS.has(method) ? method : 'other'

/** The label of a request no route matched (404s, 405s, the router's own 400/414). */
export const UNMATCHED = 'unmatched'

export interface Metrics {
  registry: Registry
  requests: Counter<'route' | 'method' | 'status'>
  duration: Histogram<'route' | 'method' | 'status'>
  statementTimeouts: Counter
  rateLimited: Counter
  loginRefused: Counter<'limit'>
  conflictPairs: Counter
  /** Tile requests answered from the tile cache (hit) or drawn (miss: absent or changed since). */
  tileCacheLookups: Counter<'result'>
  /** The tile cache whose bytes and entries are reported (tiles.store.ts). */
  addTileCache: (read: () => { bytes: number, entries: number }) => void
  /** The pools whose size, use and queue are reported, by name ("primary", "replica-1", …). */
  addPool: (name: string, db: Kysely<Database>) => void
}

export function createMetrics (): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const pools = new Map<string, Kysely<Database>>()
  let tileCache: (() => { bytes: number, entries: number }) | undefined
  const tileCacheGauge = (name: string, help: string, read: (c: { bytes: number, entries: number }) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect () { this.set(tileCache === undefined ? 0 : read(tileCache())) }
    })
  tileCacheGauge('source_registry_tile_cache_bytes', 'Bytes of drawn tiles held by the tile cache (TILES_CACHE_BYTES at most).', (c) => c.bytes)
  tileCacheGauge('source_registry_tile_cache_entries', 'Tiles held by the tile cache.', (c) => c.entries)
  const poolGauge = (name: string, help: string, read: (p: { totalCount: number, idleCount: number, waitingCount: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pool'],
      registers: [registry],
      collect () {
        this.reset()
        for (const [pool, db] of pools) {
          const p = poolOf(db)
          if (p !== undefined) this.set({ pool }, read(p))
        }
      }
    })
  poolGauge('source_registry_db_pool_size', 'Connections open in the pool.', (p) => p.totalCount)
  poolGauge('source_registry_db_pool_in_use', 'Connections of the pool running a query or a transaction.', (p) => p.totalCount - p.idleCount)
  poolGauge('source_registry_db_pool_waiting', 'Queries waiting for a connection of the pool.', (p) => p.waitingCount)
  // High availability (a DATABASE_URL of several hosts): which host is the primary, how often it changed.
  new Gauge({
    name: 'source_registry_db_primary',
    help: 'With a DATABASE_URL of several hosts: 1 for the host (host:port) writes go to now.',
    labelNames: ['host'],
    registers: [registry],
    collect () {
      this.reset()
      const db = pools.get('primary')
      const host = db === undefined ? undefined : failoverOf(db)?.host
      if (host !== undefined) this.set({ host }, 1)
    }
  })
  new Counter({
    name: 'source_registry_db_failovers_total',
    help: 'With a DATABASE_URL of several hosts: times the primary moved to another host since this instance started.',
    registers: [registry],
    collect () {
      const db = pools.get('primary')
      const f = db === undefined ? undefined : failoverOf(db)
      if (f !== undefined) { this.reset(); this.inc(f.failovers) }
    }
  })
  new Gauge({
    name: 'source_registry_db_standbys',
    help: 'Standbys streaming from the primary now (pg_stat_replication), by sync_state (sync, potential, async, quorum).',
    labelNames: ['sync_state'],
    registers: [registry],
    async collect () {
      this.reset()
      const db = pools.get('primary')
      if (db === undefined || poolOf(db) === undefined) return
      try {
        const { rows } = await sql<{ sync_state: string, n: number }>`SELECT sync_state, count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming' GROUP BY sync_state`.execute(db)
        for (const r of rows) this.set({ sync_state: r.sync_state }, r.n)
      } catch {
        // The primary does not answer: no figure rather than a wrong one.
      }
    }
  })
  return {
    registry,
    requests: new Counter({ name: 'source_registry_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], registers: [registry] }),
    duration: new Histogram({
      name: 'source_registry_http_request_duration_seconds',
      help: 'Time from a request\'s arrival to its response\'s end, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry]
    }),
    statementTimeouts: new Counter({ name: 'source_registry_db_statement_timeouts_total', help: 'Requests answered 503 because a statement ran past DB_STATEMENT_TIMEOUT_MS.', registers: [registry] }),
    rateLimited: new Counter({ name: 'source_registry_rate_limit_rejections_total', help: 'Requests refused 429 by the request rate limit (RATE_LIMIT_MAX).', registers: [registry] }),
    loginRefused: new Counter({ name: 'source_registry_login_throttle_rejections_total', help: 'Logins refused 429 by the login throttle, by the limit reached (pair, address).', labelNames: ['limit'], registers: [registry] }),
    conflictPairs: new Counter({ name: 'source_registry_conflict_pairs_total', help: 'Conflict pairs (two sources claiming the same land for the same time) recorded by writes of this instance.', registers: [registry] }),
    tileCacheLookups: new Counter({ name: 'source_registry_tile_cache_lookups_total', help: 'Tile requests answered from the tile cache (result "hit") or drawn (result "miss"); the hit ratio is hit / (hit + miss).', labelNames: ['result'], registers: [registry] }),
    addPool: (name, db) => { pools.set(name, db) },
    addTileCache: (read) => { tileCache = read }
  }
}
