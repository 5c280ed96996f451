// The door to the attribute schemas: the current one of an organisation, compiled once per
// version and process (each call asks the database only which version is current, so a schema
// set through another instance applies to the very next write here), setting a new version (its
// view, then its indexes), the history, and the check of the sources written before it.
import type { Kysely } from 'kysely'
import { LRUCache } from 'lru-cache'
import type { Database } from '../db/database.js'
import { type AttributeSchema, compileSchema, violations } from './attribute-schemas.js'
import { type AttributeSchemaRow, attributesPage, createIndexes, currentVersion, findSchema, insertSchema, schemaHistory } from './attribute-schemas.repository.js'
import type { ErrorDetail } from '../errors.js'

export interface AttributeSchemaStore {
  /** The organisation's current schema, compiled; undefined when it never declared one. Writes check against it. */
  current: (organisation: string) => Promise<AttributeSchema | undefined>
  /**
   * The same for reads (a filter's, sortby's and properties' names and types, the queryables):
   * the current version as known at most READ_VERSION_TTL_MS ago, so that a listing does not
   * spend a round trip on it; a schema set through another instance reaches its reads that late.
   */
  recent: (organisation: string) => Promise<AttributeSchema | undefined>
  /** One version as stored (undefined: no such version), or the current one. */
  find: (organisation: string, version?: number) => Promise<AttributeSchemaRow | undefined>
  /** Sets a new version as the account `by` (its id) (`expected`: the current version the writer saw, 0 for none; undefined when another came first). */
  set: (organisation: string, schema: unknown, by: string, expected: number | undefined) => Promise<AttributeSchemaRow | undefined>
  history: (organisation: string) => Promise<Array<Omit<AttributeSchemaRow, 'schema' | 'organisation'>>>
  /** The organisation's sources whose attributes the current schema refuses, in id order after `after`: `limit` at most, and where to go on. */
  check: (organisation: string, after: string, limit: number) => Promise<{ version: number, sources: Array<{ id: string, problems: ErrorDetail[] }>, next?: string } | undefined>
}

/** How long a read may use the version it last saw of an organisation's schema. */
export const READ_VERSION_TTL_MS = 2000

export function attributeSchemaStore (db: Kysely<Database>, { concurrentIndexes }: { concurrentIndexes: boolean }): AttributeSchemaStore {
  const compiled = new LRUCache<string, AttributeSchema>({ max: 1000 })
  // 0: none declared (lru-cache keeps no undefined).
  const seen = new LRUCache<string, number>({ max: 10_000, ttl: READ_VERSION_TTL_MS })
  const versionOf = async (organisation: string): Promise<number | undefined> => {
    const version = await currentVersion(db, organisation)
    seen.set(organisation, version ?? 0)
    return version
  }
  const current = async (organisation: string, known?: number): Promise<AttributeSchema | undefined> => {
    const version = known ?? await versionOf(organisation)
    if (version === undefined || version === 0) return undefined
    const key = `${version}\u0000${organisation}`
    let schema = compiled.get(key)
    if (schema === undefined) {
      const row = await findSchema(db, organisation, version)
      if (row === undefined) return undefined
      compiled.set(key, schema = compileSchema(row.schema, row.version))
    }
    return schema
  }
  return {
    current: async (organisation) => await current(organisation),
    recent: async (organisation) => await current(organisation, seen.get(organisation)),
    find: (organisation, version) => findSchema(db, organisation, version),
    set: async (organisation, schema, by, expected) => {
      const checked = compileSchema(schema, 0)
      const row = await insertSchema(db, organisation, checked.schema, checked.declared, by, expected)
      if (row !== undefined) await createIndexes(db, checked.declared, concurrentIndexes)
      // This instance's reads see the new version at once.
      seen.delete(organisation)
      return row
    },
    history: (organisation) => schemaHistory(db, organisation),
    check: async (organisation, after, limit) => {
      const schema = await current(organisation)
      if (schema === undefined) return undefined
      const sources: Array<{ id: string, problems: ErrorDetail[] }> = []
      let from = after
      // Pages of the organisation's sources until `limit` refused ones are found or none is left.
      for (;;) {
        const page = await attributesPage(db, organisation, from, 1000)
        for (const row of page) {
          const problems = violations(schema, row.attributes, '/properties')
          if (problems.length > 0) sources.push({ id: row.id, problems })
          from = row.id
          if (sources.length === limit) return { version: schema.version, sources, next: row.id }
        }
        if (page.length < 1000) return { version: schema.version, sources }
      }
    }
  }
}
