// Applies sql/NNN_*.sql in order, each once, in its own transaction, recorded in
// schema_migrations with a checksum. An advisory lock held by each file's transaction makes
// concurrent runs wait for each other instead of applying twice. Applied files are frozen: an edited one is an error.
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { type Kysely, sql } from 'kysely'
import type { Database } from './database.js'

export const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url))
const LOCK_KEY = 727_001 // arbitrary, constant: "source-registry migrations"

export interface MigrationResult { applied: string[], skipped: string[] }

export async function listMigrations (dir = SQL_DIR): Promise<Array<{ name: string, text: string, checksum: string }>> {
  const names = (await readdir(dir)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort()
  return Promise.all(names.map(async (name) => {
    const text = await readFile(`${dir}/${name}`, 'utf8')
    return { name, text, checksum: createHash('sha256').update(text).digest('hex') }
  }))
}

/** Called before each file is applied, so a slow first start can say what it is doing. */
export type OnApply = (name: string) => void

export async function migrate (db: Kysely<Database>, dir = SQL_DIR, onApply: OnApply = () => {}): Promise<MigrationResult> {
  const migrations = await listMigrations(dir)
  const result: MigrationResult = { applied: [], skipped: [] }
  // One transaction per file, the lock taken inside it (pg_advisory_xact_lock): a transaction
  // runs on one server connection even behind a transaction-pooling PgBouncer, where a
  // session-level lock and its unlock could land on two different ones and leak the lock.
  for (const m of migrations) {
    await db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx)
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`.execute(trx)
      const done = await trx.selectFrom('schema_migrations').select('checksum').where('name', '=', m.name).executeTakeFirst()
      if (done !== undefined) {
        if (done.checksum !== m.checksum) throw new Error(`migration ${m.name} was changed after it was applied; migrations are append-only, add a new file instead`)
        result.skipped.push(m.name)
        return
      }
      onApply(m.name)
      await sql`COMMENT ON TABLE schema_migrations IS 'SQL files of sql/ applied to this database (make migrate).'`.execute(trx)
      await sql.raw(m.text).execute(trx)
      await trx.insertInto('schema_migrations').values({ name: m.name, checksum: m.checksum }).execute()
      result.applied.push(m.name)
    })
  }
  return result
}
