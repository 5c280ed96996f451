// Builds the pg pool and the Kysely instance over it. Every connection runs in UTC so timestamps
// without an explicit zone can never be read in a server's local time.
import { createHash } from 'node:crypto'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'

/**
 * A pg client that runs every parameterised query as a named prepared statement. All of the
 * service's SQL has a fixed text (collections travel as arrays, not as VALUES lists of varying
 * length), so each connection parses and plans a statement once and then only binds and
 * executes it: less work for PostgreSQL on every request. Parameterless SQL (migrations) runs
 * as before, through the simple protocol.
 */
const statementNames = new Map<string, string>()
function statementName (text: string): string {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `sr_${createHash('sha1').update(text).digest('base64url')}`
    // The service's statements are a handful of fixed texts; the bound only guards the memory.
    if (statementNames.size < 1000) statementNames.set(text, name)
  }
  return name
}

class PreparingClient extends pg.Client {
  // pg's query() has many overloads; only (text, values[]) from Kysely is rewritten.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query (config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      return super.query({ name: statementName(config), text: config, values }, callback)
    }
    return super.query(config, values, callback)
  }
}

export interface ConnectOptions {
  url: string
  poolMax?: number
  connectTimeoutMs?: number
  statementTimeoutMs?: number
  onPoolError?: (err: Error) => void
}

export function connect (opts: ConnectOptions): Kysely<Database> {
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString: opts.url,
    max: opts.poolMax ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 2000,
    idleTimeoutMillis: 30_000,
    statement_timeout: opts.statementTimeoutMs ?? 30_000,
    options: '-c TimeZone=UTC',
    application_name: 'source-registry'
  })
  // A client whose server goes away emits 'error': on the pool when it is idle, on the client
  // itself when it is checked out for a query (the query also rejects). Without listeners either
  // would crash the process; with them the pool drops the client and opens a new one later.
  const onError = opts.onPoolError ?? (() => {})
  pool.on('error', onError)
  pool.on('connect', (client) => { client.on('error', onError) })
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
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
