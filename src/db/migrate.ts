// Applies sql/NNN_*.sql in order, each once, in its own transaction, recorded in
// schema_migrations with a checksum. A session-level advisory lock makes concurrent runs wait
// for each other instead of applying twice. Applied files are frozen: an edited one is an error.
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
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${LOCK_KEY})`.execute(conn)
    try {
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`.execute(conn)
      await sql`COMMENT ON TABLE schema_migrations IS 'SQL files of sql/ applied to this database (make migrate).'`.execute(conn)
      const done = new Map((await conn.selectFrom('schema_migrations').select(['name', 'checksum']).execute())
        .map((r) => [r.name, r.checksum]))
      const result: MigrationResult = { applied: [], skipped: [] }
      for (const m of migrations) {
        const applied = done.get(m.name)
        if (applied !== undefined) {
          if (applied !== m.checksum) throw new Error(`migration ${m.name} was changed after it was applied; migrations are append-only, add a new file instead`)
          result.skipped.push(m.name)
          continue
        }
        onApply(m.name)
        await conn.transaction().execute(async (trx) => {
          await sql.raw(m.text).execute(trx)
          await trx.insertInto('schema_migrations').values({ name: m.name, checksum: m.checksum }).execute()
        })
        result.applied.push(m.name)
      }
      return result
    } finally {
      await sql`SELECT pg_advisory_unlock(${LOCK_KEY})`.execute(conn)
    }
  })
}
