// Listing queries (OGC API items) on the fast path: each compiled once per shape of its input
// (which filters are present, which sort: compiled-query.ts compileByShape), then only bound to
// the request's values. Building and compiling a listing query with Kysely on every request cost
// ~10 % of an items request's CPU (bench/NOTES.md).
import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import { type Db, type ListInput, LIST_INPUT_SHAPE_KEYS, type RunListing } from '../sources/sources.repository.js'
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
