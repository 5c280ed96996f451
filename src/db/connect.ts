// Builds the pg pool and the Kysely instance over it. A direct connection runs in UTC so timestamps
// without an explicit zone can never be read in a server's local time (and the SQL gives every
// timestamp a zone, so a pooled connection in another TimeZone reads the same).
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'
import { PreparingClient } from './prepared-client.js'

export interface ConnectOptions {
  url: string
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  /** Run parameterised queries as named prepared statements (fast/prepared-client.ts). */
  preparedStatements?: boolean
  /**
   * Behind a transaction-pooling PgBouncer (1.18 refuses startup parameters it does not track):
   * no statement_timeout nor options in the startup packet. The statement timeout is then the
   * client's (pg's query_timeout), and the SQL never depends on the session's TimeZone.
   */
  transactionPooler?: boolean
  onPoolError?: (err: Error) => void
}

export function connect (opts: ConnectOptions): Kysely<Database> {
  const pool = new pg.Pool({
    ...(opts.preparedStatements === true ? { Client: PreparingClient } : {}),
    connectionString: opts.url,
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  pools.set(db, pool)
  return db
}

const pools = new WeakMap<Kysely<Database>, pg.Pool>()

/** The pg pool under a database opened by connect (for its metrics); undefined for any other (embedded). */
export function poolOf (db: Kysely<Database>): pg.Pool | undefined {
  return pools.get(db)
}

/** postgres://user:secret@host/db → postgres://user@host/db, for logs and the CLI. */
export function redactUrl (url: string): string {
  try {
    const u = new URL(url)
    u.password = ''
    return u.toString()
  } catch {
    return '(unparseable DATABASE_URL)'
  }
}
