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
import type { Database } from './database.js'

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
 * The input with each of its parameters replaced by `replace(index, value)`, where index counts
 * the parameters in the order shapeOf visits them. Every string and number is a parameter, except
 * the values of `shapeKeys`; booleans, nulls, array lengths and which keys are present are the
 * input's shape. Used once per shape, to compile it.
 */
function parameterise (input: unknown, shapeKeys: readonly string[], replace: (index: number, value: string | number) => unknown): unknown {
  let index = 0
  const visit = (value: unknown, key: string): unknown => {
    if (typeof value === 'string' || typeof value === 'number') return shapeKeys.includes(key) ? value : replace(index++, value)
    if (Array.isArray(value)) return value.map((v) => visit(v, key))
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, visit(v, k)]))
    }
    return value
  }
  return visit(input, '')
}

/**
 * The shape of an input (see parameterise) as a string, and its parameters' values in order. Run
 * on every request, so it walks the input once and allocates only the two results.
 */
export function shapeOf (input: unknown, shapeKeys: readonly string[]): { shape: string, values: Array<string | number> } {
  const values: Array<string | number> = []
  const visit = (value: unknown, key: string): string => {
    if (typeof value === 'string' || typeof value === 'number') {
      if (shapeKeys.includes(key)) return JSON.stringify(value)
      values.push(value)
      return typeof value === 'string' ? '?' : '#'
    }
    if (Array.isArray(value)) {
      let out = '['
      for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + visit(value[i], key)
      return `${out}]`
    }
    if (value !== null && typeof value === 'object') {
      let out = '{'
      for (const k in value) {
        const v = (value as Record<string, unknown>)[k]
        if (v !== undefined && Object.hasOwn(value, k)) out += `${out === '{' ? '' : ','}${JSON.stringify(k)}:${visit(v, k)}`
      }
      return `${out}}`
    }
    return value === undefined ? 'u' : String(value)
  }
  return { shape: visit(input, ''), values }
}

/** Compiles `build` for the shape of `input`; the result binds the values of any input of that shape. */
function compileShape<I, O> (build: (input: I) => Compilable<O>, input: I, shapeKeys: readonly string[]): (values: ReadonlyArray<string | number>) => CompiledQuery<O> {
  const placeholders: Record<string, unknown> = {}
  const withPlaceholders = parameterise(input, shapeKeys, (index, value) => {
    placeholders[index] = typeof value === 'string' ? placeholder(String(index)) : new NumberPlaceholder(String(index))
    return placeholders[index]
  }) as I
  // A parameter that a shape does not use (the cap of a page without a count) is left out.
  const bound = bind(build(withPlaceholders).compile(), placeholders, false)
  // The placeholders are named by index, so the values array is looked up by the same names.
  return (values) => bound(values as unknown as Record<string, unknown>)
}

/**
 * compileOnce for queries whose SQL text depends on the shape of their input (which filters are
 * present, the sort, how many boxes) and not only on its values: each shape is compiled on first
 * use (see parameterise for what is a parameter).
 */
export function compileByShape<I, O> (build: (input: I) => Compilable<O>, shapeKeys: readonly string[]): (input: I) => CompiledQuery<O> {
  const shapes = new Map<string, (values: ReadonlyArray<string | number>) => CompiledQuery<O>>()
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
