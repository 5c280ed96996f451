// Queries built and compiled with Kysely once, when the module loads, then bound to new values
// per request: building a query per request (expression builders, operation nodes, the
// compiler's walk) costs CPU on every request while the SQL text never changes.
//
// The query is built once with placeholder values: unique strings, or array instances, that
// stand for a parameter and are found again among the compiled parameters by identity.
import {
  type Compilable, type CompiledQuery, DummyDriver, Kysely,
  PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler
} from 'kysely'
import { randomUUID } from 'node:crypto'
import type { Database } from '../db/database.js'

/** A Kysely that builds and compiles PostgreSQL but never connects (Kysely's DummyDriver recipe). */
export const queryBuilder = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler()
  }
})

/** A string that can only be the placeholder of parameter `name`. */
export const placeholder = (name: string): string => `\u0000${name}:${randomUUID()}`

/**
 * Compiles `build(placeholders)` now; the returned function gives the CompiledQuery for new
 * values. Every placeholder must reach the compiled parameters as it is (not inside an
 * expression that changes it), or compiling throws.
 */
export function compileOnce<P extends Record<string, unknown>, O> (placeholders: P, build: (params: P) => Compilable<O>): (values: P) => CompiledQuery<O> {
  const compiled = build(placeholders).compile()
  const names = Object.keys(placeholders) as Array<keyof P>
  const slots = compiled.parameters.map((p) => names.find((n) => placeholders[n] === p))
  for (const n of names) {
    if (!slots.includes(n)) throw new Error(`compileOnce: placeholder "${String(n)}" is not a parameter of the compiled query`)
  }
  return (values) => ({
    ...compiled,
    parameters: slots.map((slot, i) => slot === undefined ? compiled.parameters[i] : values[slot])
  })
}
