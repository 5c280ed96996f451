// Listing queries (OGC API items) on the fast path: each compiled once per shape of its input
// (which filters are present, which sort: compiled-query.ts compileByShape), then only bound to
// the request's values: building and compiling a listing query with Kysely on every request is a
// measurable share of an items request's CPU (docs/performance.md).
import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type { Database, Db } from '../db/database.js'
import { type ListInput, LIST_INPUT_SHAPE_KEYS, type RunListing } from '../sources/sources.listing.js'
import { compileByShape, queryBuilder } from './compiled-query.js'

type Build = (db: Db, input: ListInput) => Compilable<unknown>

export function compiledListing (db: Kysely<Database>): RunListing {
  const compiled = new Map<Build, (input: ListInput) => CompiledQuery<unknown>>()
  return async <O>(build: (db: Db, input: ListInput) => Compilable<O>, input: ListInput): Promise<O[]> => {
    let bind = compiled.get(build)
    if (bind === undefined) compiled.set(build, bind = compileByShape((i: ListInput) => build(queryBuilder, i), LIST_INPUT_SHAPE_KEYS))
    return (await db.executeQuery(bind(input) as CompiledQuery<O>)).rows
  }
}
