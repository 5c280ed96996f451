// PGlite's one PostgreSQL session, lent to one holder at a time: the service's Kysely pool (one
// "connection" from connect to release, so a transaction is never interleaved) or an analyst on
// the embedded SQL port (embedded-sql.ts; from a statement to the next ReadyForQuery that says
// idle, so an analyst's transaction, extended-protocol exchange or COPY is never interleaved
// either). Whatever an analyst SETs lives in the same session: before the service's next turn
// after an analyst's, the session's settings are reset to the service's.
import type { PGlite } from '@electric-sql/pglite'

/** The settings the service's SQL relies on, applied at open and after every analyst's turn. */
export const SERVICE_SESSION_SQL = "SET TimeZone = 'UTC'; SET client_encoding = 'UTF8'"

export class EmbeddedSession {
  private tail: Promise<void> = Promise.resolve()
  /** An analyst has held the session since the service last did. */
  private analystWasHere = false

  constructor (private readonly pg: PGlite) {}

  /** Waits for the session; resolves to the function that hands it on. */
  async acquire (): Promise<() => void> {
    let release!: () => void
    const previous = this.tail
    this.tail = new Promise<void>((resolve) => { release = resolve })
    await previous
    return release
  }

  /** The service's turn: the session as the service left it (settings reset after an analyst). */
  async acquireForService (): Promise<() => void> {
    const release = await this.acquire()
    if (this.analystWasHere) {
      try {
        await this.pg.exec(`RESET ALL; ${SERVICE_SESSION_SQL}`)
        this.analystWasHere = false
      } catch (err) {
        release()
        throw err
      }
    }
    return release
  }

  /** An analyst's turn. */
  async acquireForAnalyst (): Promise<() => void> {
    const release = await this.acquire()
    this.analystWasHere = true
    return release
  }

  /** Resolves once every holder so far has handed the session on. */
  async drain (): Promise<void> {
    await this.tail
  }
}
