// The conflict tolerance lives in the database (source_conflict_settings), since every stored
// pair was computed with it; CONFLICT_TOLERANCE_M is applied by migrate and at start-up.
import { sql } from 'kysely'
import type { Db } from '../db/database.js'

/** The tolerance the database's conflicts were computed with (undefined before sql/008). */
export async function storedConflictTolerance (db: Db): Promise<number | undefined> {
  const { rows } = await sql<{ t: number | null }>`SELECT CASE WHEN to_regclass('source_conflict_settings') IS NOT NULL THEN sources_conflict_tolerance_m() END AS t`.execute(db)
  return rows[0]?.t ?? undefined
}

/** Sets the tolerance; when it changed, every pair is computed again (their number is returned). */
export async function applyConflictTolerance (db: Db, metres: number): Promise<{ changed: false } | { changed: true, pairs: number }> {
  const { rows } = await sql<{ pairs: string | null }>`SELECT sources_set_conflict_tolerance(${metres}::float8) AS pairs`.execute(db)
  const pairs = rows[0]?.pairs ?? null
  return pairs === null ? { changed: false } : { changed: true, pairs: Number(pairs) }
}
