// Queries built and compiled with Kysely once, when the module loads, then bound to new values
// per request: building a query per request (expression builders, operation nodes, the
// compiler's walk) costs CPU on every request while the SQL text never changes.
//
// The query is built once with placeholder values: unique strings, or array instances, that
// stand for a parameter and are found again among the compiled parameters by identity. A query
// whose SQL depends on which of its inputs are present (the items' filters and sort) is compiled
// once per shape of its input (compileByShape).
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
  return bind(build(placeholders).compile(), placeholders, true)
}

function bind<P extends Record<string, unknown>, O> (compiled: CompiledQuery<O>, placeholders: P, everyOne: boolean): (values: P) => CompiledQuery<O> {
  const names = Object.keys(placeholders) as Array<keyof P>
  const slots = compiled.parameters.map((p) => names.find((n) => placeholders[n] === p))
  for (const n of everyOne ? names : []) {
    if (!slots.includes(n)) throw new Error(`compileOnce: placeholder "${String(n)}" is not a parameter of the compiled query`)
  }
  return (values) => ({
    ...compiled,
    parameters: slots.map((slot, i) => slot === undefined ? compiled.parameters[i] : values[slot])
  })
}

/** The placeholder of a number parameter: an object, found again by identity. */
class NumberPlaceholder {
  constructor (readonly name: string) {}
}

/**
 * The input with each of its parameters replaced by `replace(path, value)`, and the values by
 * path, in a fixed order. Every string and number is a parameter, except the values of
 * `shapeKeys`; booleans, nulls, array lengths and which keys are present are the input's shape.
 */
function parameterise (input: unknown, shapeKeys: readonly string[], replace: (path: string, value: string | number) => unknown): { replaced: unknown, values: Record<string, string | number> } {
  const values: Record<string, string | number> = {}
  const visit = (value: unknown, path: string, key: string): unknown => {
    if (typeof value === 'string' || typeof value === 'number') {
      if (shapeKeys.includes(key)) return value
      values[path] = value
      return replace(path, value)
    }
    if (Array.isArray(value)) return value.map((v, i) => visit(v, `${path}.${i}`, key))
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, visit(v, `${path}.${k}`, k)]))
    }
    return value
  }
  return { replaced: visit(input, '', ''), values }
}

/** The shape of an input (parameterise) as a string, and its parameters' values. */
export function shapeOf (input: unknown, shapeKeys: readonly string[]): { shape: string, values: Record<string, string | number> } {
  const { replaced, values } = parameterise(input, shapeKeys, (_path, value) => typeof value === 'string' ? '?' : '#')
  return { shape: JSON.stringify(replaced), values }
}

/** Compiles `build` for the shape of `input`; the result binds the values of any input of that shape. */
function compileShape<I, O> (build: (input: I) => Compilable<O>, input: I, shapeKeys: readonly string[]): (values: Record<string, unknown>) => CompiledQuery<O> {
  const placeholders: Record<string, unknown> = {}
  const withPlaceholders = parameterise(input, shapeKeys, (path, value) => {
    placeholders[path] = typeof value === 'string' ? placeholder(path) : new NumberPlaceholder(path)
    return placeholders[path]
  }).replaced as I
  // A parameter that a shape does not use (the cap of a page without a count) is left out.
  return bind(build(withPlaceholders).compile(), placeholders, false)
}

/**
 * compileOnce for queries whose SQL text depends on the shape of their input (which filters are
 * present, the sort, how many boxes) and not only on its values: each shape is compiled on first
 * use (see parameterise for what is a parameter).
 */
export function compileByShape<I, O> (build: (input: I) => Compilable<O>, shapeKeys: readonly string[]): (input: I) => CompiledQuery<O> {
  const shapes = new Map<string, (values: Record<string, unknown>) => CompiledQuery<O>>()
  return (input) => {
    const { shape, values } = shapeOf(input, shapeKeys)
    let compiled = shapes.get(shape)
    if (compiled === undefined) {
      compiled = compileShape(build, input, shapeKeys)
      // The shapes are few (filters present or not, four sorts); the bound only guards the memory.
      if (shapes.size < 1000) shapes.set(shape, compiled)
    }
    return compiled(values)
  }
}
