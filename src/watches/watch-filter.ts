// A watch's CQL2 filter: checked as the items' filter is (features/filters/cql2.ts: the same
// queryables, types and limits), and made into the SQL condition the database evaluates on each
// source that starts to overlap the watch (watches_filter_matches in sql/functions/watches.sql).
// The condition is the items' own (sources/filter.sql.ts) on the row `sources`, with its bound
// parameters written in as literals, since it is stored and run later by a trigger.
import { type RawBuilder, sql } from 'kysely'
import { queryBuilder } from '../db/compiled-query.js'
import { type CheckedFilter, FILTER_LANGS, checkFilter } from '../features/filters/cql2.js'
import type { SearchBox } from '../sources/search-box.js'
import { filterSql } from '../sources/filter.sql.js'

export type FilterLang = typeof FILTER_LANGS[number]

/** The filter checked, or why not. */
export function checkWatchFilter (filter: string, lang: FilterLang): CheckedFilter | { error: string } {
  return checkFilter(filter, lang)
}

const GEOM = sql.ref('sources.geom')

function intersectsBox ({ west, south, east, north }: SearchBox): RawBuilder<boolean> {
  const box = sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
  return sql<boolean>`(${GEOM} && ${box} AND ST_Intersects(${GEOM}, ${box}))`
}

/** A bound value as an SQL literal: an escape string (right whatever standard_conforming_strings says), a number, a boolean. */
function literal (value: unknown): string {
  if (value === null) return 'NULL'
  if (typeof value === 'string') return `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
  if (typeof value === 'number' && Number.isFinite(value)) return `(${String(value)})`
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE'
  throw new Error(`a filter parameter of type ${typeof value} cannot be written as a literal`)
}

/**
 * Replaces each $n of compiled SQL outside quoted strings and identifiers with the literal of
 * its parameter (inside them, a $ is text: an attribute name may hold one).
 */
export function inlineParameters (text: string, parameters: readonly unknown[]): string {
  let out = ''
  let i = 0
  while (i < text.length) {
    const ch = text[i] as string
    if (ch === '\'' || ch === '"') {
      let j = i + 1
      while (j < text.length) {
        if (text[j] === ch) {
          if (text[j + 1] === ch) { j += 2; continue }
          break
        }
        j++
      }
      out += text.slice(i, j + 1)
      i = j + 1
      continue
    }
    const m = ch === '$' ? /^\$(\d+)/.exec(text.slice(i)) : null
    if (m !== null) {
      out += literal(parameters[Number(m[1]) - 1])
      i += m[0].length
      continue
    }
    out += ch
    i++
  }
  return out
}

/** The SQL condition of a checked filter on the row `sources`, parameters written in. */
export function watchFilterSql (checked: CheckedFilter): string {
  const compiled = sql`${filterSql(checked.expr, intersectsBox)}`.compile(queryBuilder)
  return inlineParameters(compiled.sql, compiled.parameters)
}
