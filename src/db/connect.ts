// Builds the pg pool and the Kysely instance over it. A direct connection runs in UTC so timestamps
// without an explicit zone can never be read in a server's local time (and the SQL gives every
// timestamp a zone, so a pooled connection in another TimeZone reads the same). A URL naming
// several hosts, or asking for target_session_attrs, gets a FailoverPool (db/failover-pool.ts).
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'
import { FailoverPool, NoHostError, fitsTarget, type FailoverEvents } from './failover-pool.js'
import { isPlain, parseTargets } from '../connection-string.js'
import { CallbackClient, PreparingClient } from './prepared-client.js'

export interface ConnectOptions {
  url: string
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  /** Run parameterised queries as named prepared statements (prepared-client.ts). */
  preparedStatements?: boolean
  /**
   * Behind a transaction-pooling PgBouncer (1.18 refuses startup parameters it does not track):
   * no statement_timeout nor options in the startup packet. The statement timeout is then the
   * client's (pg's query_timeout), and the SQL never depends on the session's TimeZone.
   */
  transactionPooler?: boolean
  onPoolError?: (err: Error) => void
  /** Multi-host: told when the host served changes. */
  failover?: FailoverEvents
}

/** A pool, plain or failover, as a connection of its own is taken from it. */
export interface ConnectionSource { connect: () => Promise<pg.PoolClient> }

/** What the metrics read of a pool, plain or failover. */
export interface PoolCounts { totalCount: number, idleCount: number, waitingCount: number }

export function connect (opts: ConnectOptions): Kysely<Database> {
  const targets = parseTargets(opts.url)
  const Client = opts.preparedStatements === true ? PreparingClient : CallbackClient
  if (isPlain(targets)) {
    // pg reads a URL, not libpq's keyword form: that one travels as the URL it was split into.
    const pool = makePool(opts, /^postgres(ql)?:\/\//.test(opts.url.trim()) ? opts.url : (targets.hosts[0] as { url: string }).url, Client)
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    pools.set(db, pool)
    copyable(db, opts, pool)
    return db
  }
  const pool = new FailoverPool({
    ...opts.failover,
    hosts: targets.hosts,
    targetSessionAttrs: targets.targetSessionAttrs,
    connectTimeoutMs: opts.connectTimeoutMs ?? 2000,
    makePool: (url, onConnect) => makePool(opts, url, Client, onConnect)
  })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  pools.set(db, pool)
  failoverPools.set(db, pool)
  copyable(db, opts, pool)
  return db
}

/**
 * A pool whose connections may run a COPY (copy-binary.ts): not behind a transaction pooler,
 * where pg's query_timeout stands in for statement_timeout: pg clears that timer only through a
 * query's callback, which pg-copy-streams' COPY never calls, so it would fire on the connection
 * 30 s later, whoever holds it then.
 */
function copyable (db: Kysely<Database>, opts: ConnectOptions, pool: ConnectionSource): void {
  if (opts.transactionPooler !== true) copyPools.set(db, pool)
}

function makePool (opts: ConnectOptions, url: string, Client: typeof pg.Client, onConnect?: (client: pg.ClientBase) => Promise<void>): pg.Pool {
  const pool = new pg.Pool({
    Client,
    ...(onConnect !== undefined ? { onConnect } : {}),
    connectionString: url,
    max: opts.poolMax ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 2000,
    idleTimeoutMillis: 30_000,
    ...(opts.transactionPooler === true
      ? { query_timeout: opts.statementTimeoutMs ?? 30_000 }
      : { statement_timeout: opts.statementTimeoutMs ?? 30_000, options: '-c TimeZone=UTC' }),
    application_name: 'source-registry'
  })
  // A client whose server goes away emits 'error': on the pool when it is idle, on the client
  // itself when it is checked out for a query (the query also rejects). Without listeners either
  // would crash the process; with them the pool drops the client and opens a new one later.
  const onError = opts.onPoolError ?? (() => {})
  pool.on('error', onError)
  pool.on('connect', (client) => { client.on('error', onError) })
  return pool
}

const pools = new WeakMap<Kysely<Database>, PoolCounts>()
const copyPools = new WeakMap<Kysely<Database>, ConnectionSource>()
const failoverPools = new WeakMap<Kysely<Database>, FailoverPool>()

/** The pool under a database opened by connect (for its metrics); undefined for any other (embedded). */
export function poolOf (db: Kysely<Database>): PoolCounts | undefined {
  return pools.get(db)
}

/** The pool under a database opened by connect, to take a connection of its own for a COPY (copy-binary.ts); undefined for any other (embedded) and behind a transaction pooler (copyable). */
export function copyPoolOf (db: Kysely<Database>): ConnectionSource | undefined {
  return copyPools.get(db)
}

/** The failover pool under a database opened by connect on a multi-host URL; undefined otherwise. */
export function failoverOf (db: Kysely<Database>): FailoverPool | undefined {
  return failoverPools.get(db)
}

/** postgres://user:secret@host/db → postgres://user@host/db, for logs and the CLI. */
export function redactUrl (url: string): string {
  try {
    const targets = parseTargets(url)
    if (!isPlain(targets)) return `${targets.hosts.map((h) => h.name).join(',')} (target_session_attrs=${targets.targetSessionAttrs})`
    const u = new URL((targets.hosts[0] as { url: string }).url)
    u.password = ''
    return u.toString()
  } catch {
    return '(unparseable DATABASE_URL)'
  }
}

/**
 * One connection (not pooled) to the first host of `url`, in its order, that fits its
 * target_session_attrs: for the events' LISTEN, which must follow the primary too.
 */
export async function connectClient (url: string, connectTimeoutMs = 2000): Promise<pg.Client> {
  const targets = parseTargets(url)
  const errors: string[] = []
  for (const host of targets.hosts) {
    const client = new pg.Client({ connectionString: host.url, connectionTimeoutMillis: connectTimeoutMs, application_name: 'source-registry' })
    client.on('error', () => {})
    try {
      await client.connect()
      if (await fitsTarget(client, targets.targetSessionAttrs)) return client
      errors.push(`${host.name} (does not fit target_session_attrs=${targets.targetSessionAttrs})`)
    } catch (err) {
      errors.push(`${host.name} (${(err as Error).message})`)
    }
    await client.end().catch(() => {})
  }
  throw new NoHostError(`no host to connect to: ${errors.join(', ')}`)
}
