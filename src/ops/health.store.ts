// What the readiness check asks of storage: whether the database answers, and on a PostGIS
// server which host is the primary and which standbys stream from it.
import { type Kysely, sql } from 'kysely'
import type { Database } from '../db/database.js'
import { failoverOf, poolOf } from '../db/connect.js'

export interface Standby { name: string, state: string | null, sync_state: string | null, replay_lag_ms: number | null }

export interface DatabaseState {
  /** host:port writes go to (a DATABASE_URL of several hosts); null with one host. */
  primary: string | null
  /** Times the primary moved to another host since this instance started. */
  failovers: number
  standbys: Standby[]
}

export interface HealthStore {
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping: () => Promise<void>
  /** The primary and its standbys (a PostGIS server); undefined for the embedded database. */
  database: () => Promise<DatabaseState | undefined>
}

export function healthStore (db: Kysely<Database>): HealthStore {
  return {
    ping: async () => { await sql`SELECT 1`.execute(db) },
    database: async () => {
      if (poolOf(db) === undefined) return undefined
      const failover = failoverOf(db)
      const { rows } = await sql<Standby>`
        SELECT application_name AS name, state, sync_state,
               (extract(epoch FROM replay_lag) * 1000)::int AS replay_lag_ms
          FROM pg_stat_replication ORDER BY application_name`.execute(db)
      return { primary: failover?.host ?? null, failovers: failover?.failovers ?? 0, standbys: rows }
    }
  }
}
