// A pg client that runs every parameterised query as a named prepared statement. The service's
// SQL has fixed texts (collections travel as arrays, not VALUES lists of varying length), so
// each connection parses and plans a statement once and then only binds and executes it.
// Parameterless SQL (migrations) runs as before, through the simple protocol.
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

export class PreparingClient extends pg.Client {
  // pg's query() has many overloads; only (text, values[]) from Kysely is rewritten.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query (config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      return super.query({ name: statementName(config), text: config, values }, callback)
    }
    return super.query(config, values, callback)
  }
}
