// The one way to open the database, for the server, the CLI, the tests and the db plugin alike:
// the PostGIS server at DATABASE_URL, or without it the embedded PostGIS in DATA_DIR.
import type { Kysely } from 'kysely'
import type { Config } from '../config.js'
import { connect, redactUrl } from './connect.js'
import type { Database } from './database.js'
import type { Embedded } from './embedded.js'

export interface OpenedDatabase {
  db: Kysely<Database>
  kind: 'server' | 'embedded'
  /** For logs and the CLI: which database, never a password. */
  description: string
  /** Embedded: the data directory, absolute. */
  dir?: string
  /** Embedded: the pid of a previous owner that had died holding the directory. */
  tookOverFromPid?: number
  /** Embedded: the loopback port the database is served on (OpenOptions.sqlPort). */
  sqlPort?: number
  /** Embedded: a new database was made (from OpenOptions.template when it was usable). */
  created?: Embedded['created']
  /** Embedded: PostGIS is loaded on first use. */
  lazyPostgis?: boolean
}

export type DatabaseConfig = Pick<Config, 'DATABASE_URL' | 'DATA_DIR' | 'DB_POOL_MAX' | 'DB_CONNECT_TIMEOUT_MS' | 'DB_STATEMENT_TIMEOUT_MS' | 'DB_POOL_MODE'>

export interface OpenOptions {
  /** Embedded: create the database when there is none (default); false says there is none instead. */
  create?: boolean
  /** Server: pool size instead of DB_POOL_MAX (the CLI needs one or two). */
  poolMax?: number
  /** Server: a pooled connection was lost (the pool replaces it). */
  onPoolError?: (err: Error) => void
  /** Server, several hosts: the host writes go to changed (or was found first: previous undefined). */
  onPrimary?: (host: string, previous: string | undefined) => void
  /** Server, several hosts: no host fit target_session_attrs when asked. */
  onNoHost?: (message: string) => void
  /** Embedded: also serve the database on this port of 127.0.0.1 while it is open (EMBEDDED_SQL_PORT; the service alone asks). */
  sqlPort?: number
  /** Embedded: a new database starts as a copy of this migrated template when usable (embedded-template.ts). */
  template?: string
}

export async function openDatabase (config: DatabaseConfig, opts: OpenOptions = {}): Promise<OpenedDatabase> {
  if (config.DATABASE_URL !== undefined) {
    const db = connect({
      url: config.DATABASE_URL,
      poolMax: opts.poolMax ?? config.DB_POOL_MAX,
      connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      // Named prepared statements outlive a transaction: behind a transaction pooler another
      // client's session would meet them ("prepared statement … already exists").
      preparedStatements: config.DB_POOL_MODE === 'session',
      transactionPooler: config.DB_POOL_MODE === 'transaction',
      onPoolError: opts.onPoolError,
      failover: { onPrimary: opts.onPrimary, onProbeFailed: opts.onNoHost }
    })
    return { db, kind: 'server', description: `PostGIS server ${redactUrl(config.DATABASE_URL)}` }
  }
  // Loaded only without DATABASE_URL: PGlite and its PostGIS add ~6 MB of memory to a process
  // that never uses them.
  const { openEmbedded } = await import('./embedded.js')
  const embedded = await openEmbedded(config.DATA_DIR, { create: opts.create, sqlPort: opts.sqlPort, template: opts.template })
  return {
    db: embedded.db,
    kind: 'embedded',
    description: `embedded PostGIS in ${embedded.dir}`,
    dir: embedded.dir,
    tookOverFromPid: embedded.tookOverFromPid,
    sqlPort: embedded.sqlPort,
    created: embedded.created,
    lazyPostgis: embedded.lazyPostgis
  }
}
