// The pg clients of the server backend's pools. PreparingClient runs every parameterised query as
// a named prepared statement: the service's SQL has fixed texts (collections travel as arrays,
// not VALUES lists of varying length), so each connection parses and plans a statement once and
// then only binds and executes it. Parameterless SQL (migrations) runs as before, through the
// simple protocol. Without prepared statements (behind a transaction-pooling PgBouncer, and
// wherever connect() is not asked for them), CallbackClient runs them unnamed.
import { createHash } from 'node:crypto'
import pg from 'pg'

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

// pg's query() has many overloads; only (text, values[]), as Kysely sends every statement, is
// rewritten.
/* eslint-disable @typescript-eslint/no-explicit-any */

/**
 * The server backend's client: a statement Kysely sends is answered through pg's callback and a
 * promise of our own instead of the promise pg makes. Under the items load, the rows of each page
 * read through pg's promise outlived two young-generation collections and were promoted (through
 * the callback, next to nothing is), so the old generation filled and was marked over and over,
 * a large part of each request's CPU: docs/performance.md has the figures. A script of pg alone
 * does not show it; the cause inside pg or V8 was not found.
 */
export class CallbackClient extends pg.Client {
  /** What pg is given for a statement: here its text and values (PreparingClient names it). */
  protected statement (text: string, values: unknown[]): pg.QueryConfig {
    return { text, values }
  }

  override query (config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values)) {
      const statement = this.statement(config, values)
      if (callback !== undefined) return super.query(statement, callback)
      return new Promise((resolve, reject) => {
        // An error's stack ends at the socket's read; Kysely adds its caller's (extendStackTrace).
        super.query(statement, (err: Error | null, result: pg.QueryResult) => { if (err !== null && err !== undefined) reject(err); else resolve(result) })
      })
    }
    return super.query(config, values, callback)
  }
}

/** A CallbackClient that runs every parameterised statement as a named prepared one. */
export class PreparingClient extends CallbackClient {
  protected override statement (text: string, values: unknown[]): pg.QueryConfig {
    return values.length > 0 ? { name: statementName(text), text, values } : { text, values }
  }
}
