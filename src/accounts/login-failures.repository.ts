// SQL for the failed-login counters (sql/005_login_failures.sql). Functions take db first.
import { sql } from 'kysely'
import type { Db } from '../db/database.js'

export interface FailureKey { key: string, email: string | null, address: string | null }
export interface FailureCount { key: string, failures: number, retryAfterSeconds: number }

/** Counts of the given keys whose window has not ended. */
export async function findFailureCounts (db: Db, keys: string[]): Promise<FailureCount[]> {
  const { rows } = await sql<{ key: string, failures: number, retry_after: number }>`
    SELECT key, failures, ceil(extract(epoch FROM window_end - now()))::int AS retry_after
    FROM login_failures WHERE key = any(${keys}::text[]) AND window_end > now()`.execute(db)
  return rows.map((r) => ({ key: r.key, failures: r.failures, retryAfterSeconds: r.retry_after }))
}

/**
 * One more failure for each key (a new window of `windowSeconds` for a key whose window has
 * ended), returning the new counts; expired rows are pruned in the same statement.
 */
export async function recordFailure (db: Db, keys: FailureKey[], windowSeconds: number): Promise<FailureCount[]> {
  const { rows } = await sql<{ key: string, failures: number, retry_after: number }>`
    WITH pruned AS (
      DELETE FROM login_failures
      WHERE window_end < now() - interval '1 hour' AND key <> all(${keys.map((k) => k.key)}::text[])
    )
    INSERT INTO login_failures AS f (key, email, address, failures, window_end)
    SELECT k.key, k.email, k.address, 1, now() + make_interval(secs => ${windowSeconds})
    FROM ROWS FROM (
      unnest(${keys.map((k) => k.key)}::text[]),
      unnest(${keys.map((k) => k.email)}::text[]),
      unnest(${keys.map((k) => k.address)}::text[])
    ) AS k(key, email, address)
    ON CONFLICT (key) DO UPDATE SET
      failures = CASE WHEN f.window_end <= now() THEN 1 ELSE f.failures + 1 END,
      window_end = CASE WHEN f.window_end <= now() THEN excluded.window_end ELSE f.window_end END
    RETURNING key, failures, ceil(extract(epoch FROM window_end - now()))::int AS retry_after`.execute(db)
  return rows.map((r) => ({ key: r.key, failures: r.failures, retryAfterSeconds: r.retry_after }))
}

export async function clearFailures (db: Db, keys: string[]): Promise<void> {
  await sql`DELETE FROM login_failures WHERE key = any(${keys}::text[])`.execute(db)
}

/** For ops: forget the failures of an e-mail (all its pairs too) or of an address. Returns the rows removed. */
export async function unlock (db: Db, by: { email?: string, address?: string }): Promise<number> {
  const r = await sql`DELETE FROM login_failures
    WHERE (${by.email ?? null}::text IS NOT NULL AND email = lower(${by.email ?? null}::text))
       OR (${by.address ?? null}::text IS NOT NULL AND address = ${by.address ?? null}::text)`.execute(db)
  return Number(r.numAffectedRows ?? 0n)
}
