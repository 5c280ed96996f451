// The embedded backend: PostgreSQL with PostGIS compiled to WebAssembly (PGlite), in-process,
// with its data in a directory. Used when DATABASE_URL is not set, so a newcomer needs nothing
// but Node. Kysely talks to it through PostgresDialect with a small pool adapter: PGlite has
// one session, so the adapter hands it to one caller at a time (EmbeddedSession), which keeps
// transactions and session state (advisory locks) from interleaving. With EMBEDDED_SQL_PORT the
// same session is also served to analysts on a loopback port (embedded-sql.ts).
import { existsSync, mkdirSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist'
import { Kysely, PostgresDialect, sql as ksql } from 'kysely'
import type { Database } from './database.js'
import { lockDataDir } from './data-dir-lock.js'
import { postgisExtension } from './embedded-postgis.js'
import { checkTemplate, copyTemplate, saveTemplate, type TemplateCheck } from './embedded-template.js'
import { listMigrations, migrate, SQL_DIR } from './migrate.js'
import { EmbeddedSession, SERVICE_SESSION_SQL } from './embedded-session.js'
import { serveEmbeddedSql } from './embedded-sql.js'

export { DataDirInUseError } from './data-dir-lock.js'

/** A command that only reads or changes existing data found no embedded database to open. */
export class NoDatabaseError extends Error {}

interface QueryResult { command: string, rowCount: number, rows: unknown[] }

// end(): the SQL port closes first (its clients' open transactions rolled back), then the database.
function adapt (pg: PGlite, session: EmbeddedSession, { stopServing, unlock }: { stopServing: () => Promise<void>, unlock: () => Promise<void> }) {
  const client = {
    async query (text: string, params: unknown[]): Promise<QueryResult> {
      // No parameters: the simple protocol, which also runs multi-statement migration files.
      if (params.length === 0) {
        const results = await pg.exec(text)
        const last = results[results.length - 1]
        return { command: commandOf(text), rowCount: last?.affectedRows ?? 0, rows: last?.rows ?? [] }
      }
      const r = await pg.query(text, params)
      return { command: commandOf(text), rowCount: r.affectedRows ?? r.rows.length, rows: r.rows }
    }
  }
  return {
    async connect () {
      const release = await session.acquireForService()
      return { ...client, release: () => release() }
    },
    async end () {
      await stopServing()
      await session.drain()
      await pg.close()
      await unlock()
    }
  }
}

// Kysely only needs to know whether a statement reports affected rows.
function commandOf (text: string): string {
  const m = /^\s*(?:WITH\b[\s\S]*?\)\s*)?(INSERT|UPDATE|DELETE|MERGE)\b/i.exec(text)
  return m?.[1]?.toUpperCase() ?? 'SELECT'
}

export interface Embedded {
  db: Kysely<Database>
  dir: string
  pgdata: string
  /** Set when the previous owner had died holding the data directory (its pid). */
  tookOverFromPid?: number
  /** The loopback port the database is served on (EMBEDDED_SQL_PORT), when asked for. */
  sqlPort?: number
  /** A new database was made, from a template when one was given and usable (embedded-template.ts). */
  created?: { template?: TemplateCheck }
  /** PostGIS is loaded on first use (embedded-postgis.ts), not by the open. */
  lazyPostgis: boolean
}

export interface OpenEmbeddedOptions {
  /** Embedded: create the database when there is none (default); false says there is none instead. */
  create?: boolean
  /** Also serve the database on 127.0.0.1:sqlPort (0: a free port) until the Kysely instance is destroyed. */
  sqlPort?: number
  /** A new database starts as a copy of this migrated template when it is usable (embedded-template.ts). */
  template?: string
}

/** PGlite on `pgdata` with the extensions sql/ uses. */
async function openPglite (pgdata: string, loadDataDir?: Blob): Promise<PGlite> {
  return PGlite.create(pgdata, { extensions: { postgis: postgisExtension().extension, btree_gist }, loadDataDir })
}

/**
 * Opens (creating on first use) the embedded database in `dataDir`. Only one process may hold a
 * data directory: a second one gets DataDirInUseError instead of corrupting it; the successor of
 * one that crashed takes over at once (data-dir-lock.ts).
 */
export async function openEmbedded (dataDir: string, { create = true, sqlPort, template }: OpenEmbeddedOptions = {}): Promise<Embedded> {
  const dir = resolve(dataDir)
  if (!create && !existsSync(join(dir, 'pgdata'))) {
    throw new NoDatabaseError(`there is no embedded database in ${dir} (DATA_DIR): start the service once or run migrate there to create one, or set DATA_DIR or DATABASE_URL`)
  }
  mkdirSync(dir, { recursive: true })
  const lock = await lockDataDir(dir)
  const unlock = lock.release
  const pgdata = join(dir, 'pgdata')
  let pg: PGlite | undefined
  let sql: Awaited<ReturnType<typeof serveEmbeddedSql>> | undefined
  let session: EmbeddedSession
  let created: Embedded['created']
  try {
    if (!existsSync(pgdata)) {
      created = {}
      if (template !== undefined) {
        created.template = checkTemplate(template, await listMigrations())
        if (created.template.usable) await copyTemplate(template, pgdata)
      }
    }
    pg = await openPglite(pgdata)
    await pg.exec(SERVICE_SESSION_SQL)
    session = new EmbeddedSession(pg)
    if (sqlPort !== undefined) sql = await serveEmbeddedSql(pg, session, sqlPort)
  } catch (err) {
    await pg?.close()
    await unlock()
    throw err
  }
  const pool = adapt(pg, session, { stopServing: async () => { await sql?.close() }, unlock })
  // `as never`: PostgresDialect's pool type also declares pg's cursor overload of query(), which
  // Kysely calls only for streaming (unused here); the adapter implements connect/query/release/end.
  return {
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: pool as never }) }),
    dir,
    pgdata,
    tookOverFromPid: lock.tookOverFrom?.pid,
    sqlPort: sql?.port,
    created,
    lazyPostgis: postgisExtension().lazy
  }
}

/**
 * Makes the migrated template in `dir` (embedded-template.ts) from the files of `sqlDir`, unless
 * the template there already holds every one of them as they are. Returns whether it made one.
 */
export async function buildEmbeddedTemplate (dir: string, sqlDir = SQL_DIR): Promise<{ built: boolean, migrations: number }> {
  const migrations = await listMigrations(sqlDir)
  const check = checkTemplate(dir, migrations)
  if (check.usable && check.pending.length === 0) return { built: false, migrations: migrations.length }
  const work = await mkdtemp(join(tmpdir(), 'sr-embedded-template-'))
  try {
    const { db, pgdata } = await openEmbedded(work)
    let recorded: Array<{ name: string, checksum: string }>
    try {
      await migrate(db, sqlDir)
      recorded = await db.selectFrom('schema_migrations').select(['name', 'checksum']).orderBy('name').execute()
      await ksql`CHECKPOINT`.execute(db)
    } finally {
      await db.destroy()
    }
    await saveTemplate(dir, pgdata, recorded)
    return { built: true, migrations: recorded.length }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/**
 * Writes the whole embedded database in `dataDir` to `file` (PGlite's dumpDataDir: the data
 * directory as a gzipped tarball), holding the directory's lock, so the service must be stopped.
 */
export async function backupEmbedded (dataDir: string, file: string): Promise<number> {
  const dir = resolve(dataDir)
  if (!existsSync(join(dir, 'pgdata'))) throw new NoDatabaseError(`there is no embedded database in ${dir} (DATA_DIR)`)
  const lock = await lockDataDir(dir)
  try {
    const pg = await openPglite(join(dir, 'pgdata'))
    try {
      const dump = await pg.dumpDataDir('gzip')
      const bytes = Buffer.from(await dump.arrayBuffer())
      await writeFile(file, bytes)
      return bytes.length
    } finally {
      await pg.close()
    }
  } finally {
    await lock.release()
  }
}

/** Makes the embedded database in `dataDir` from a backup (backupEmbedded); `dataDir` must hold none yet. */
export async function restoreEmbedded (dataDir: string, file: string): Promise<void> {
  const dir = resolve(dataDir)
  if (existsSync(join(dir, 'pgdata'))) throw new DataDirNotEmptyError(`${dir} (DATA_DIR) already holds a database: restore into a new DATA_DIR, then swap the directories`)
  mkdirSync(dir, { recursive: true })
  const lock = await lockDataDir(dir)
  try {
    const loadDataDir = new Blob([await readFile(file)])
    const pg = await openPglite(join(dir, 'pgdata'), loadDataDir)
    await pg.query('SELECT 1')
    await pg.close()
  } finally {
    await lock.release()
  }
}

/** A restore found a database where it was to make one. */
export class DataDirNotEmptyError extends Error {}
