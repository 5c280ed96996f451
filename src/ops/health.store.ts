// What the readiness check asks of storage: whether the database answers.
import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/database.js'

export interface HealthStore {
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping: () => Promise<void>
}

export function healthStore (db: Kysely<Database>): HealthStore {
  return { ping: async () => { await sql`SELECT 1`.execute(db) } }
}
