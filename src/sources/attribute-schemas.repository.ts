// SQL of the attribute schemas (sql/026_attribute_schemas.sql): the current one of an
// organisation, a new version, the history, and the typed view and indexes made from one.
import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database, Db } from '../db/database.js'
import { isoUtc } from '../db/postgis.js'
import type { DeclaredAttribute } from './attribute-schemas.js'
import { attributeValue } from './filter.sql.js'

export interface AttributeSchemaRow { organisation: string, version: number, schema: Record<string, unknown>, set_by: string, set_at: string }

const columns = sql`a.organisation, a.version, a.schema, a.set_by, ${isoUtc(sql`a.set_at`)} AS set_at`

/** The current version's number of an organisation's schema (undefined: none ever set). */
export async function currentVersion (db: Db, organisation: string): Promise<number | undefined> {
  const { rows } = await sql<{ version: number }>`SELECT max(version) AS version FROM attribute_schemas WHERE organisation = ${organisation}`.execute(db)
  return rows[0]?.version ?? undefined
}

/** One version of an organisation's schema, or the current one. */
export async function findSchema (db: Db, organisation: string, version?: number): Promise<AttributeSchemaRow | undefined> {
  const which = version === undefined ? sql`ORDER BY a.version DESC LIMIT 1` : sql`AND a.version = ${version}::int`
  const { rows } = await sql<AttributeSchemaRow>`SELECT ${columns} FROM attribute_schemas AS a WHERE a.organisation = ${organisation} ${which}`.execute(db)
  return rows[0]
}

/** Every version's number, date and author, newest first. */
export async function schemaHistory (db: Db, organisation: string): Promise<Array<Omit<AttributeSchemaRow, 'schema' | 'organisation'>>> {
  const { rows } = await sql<Omit<AttributeSchemaRow, 'schema' | 'organisation'>>`SELECT a.version, a.set_by, ${isoUtc(sql`a.set_at`)} AS set_at
    FROM attribute_schemas AS a WHERE a.organisation = ${organisation} ORDER BY a.version DESC`.execute(db)
  return rows
}


/** A name PostgreSQL takes as it is in an identifier: lower-case letters, digits and _, else a short hash. */
function slug (text: string, room: number): string {
  const plain = text.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '')
  if (plain === text && plain.length <= room && plain.length > 0) return plain
  let h = 0
  for (const c of text) h = (Math.imul(h, 31) + (c.codePointAt(0) as number)) >>> 0
  return `${plain.slice(0, room - 9)}_${h.toString(16).padStart(8, '0')}`
}

/** The index of one declared attribute: shared by every organisation declaring the name with that type. */
export const attributeIndexName = (a: DeclaredAttribute): string => `sources_attribute_${a.type.slice(0, 4)}_${slug(a.name, 40)}`

/** The view of an organisation's sources with a typed column per declared attribute. */
export const attributesViewName = (organisation: string): string => `sources_attributes_${slug(organisation, 40)}`

const BASE_COLUMNS = ['id', 'feature_id', 'geom', 'start_at', 'end_at', 'period', 'version', 'updated_at', 'area_m2', 'attributes']

/** The typed view's columns: the source's own, then one per declared attribute (suffixed when its name is taken). */
function viewColumns (declared: DeclaredAttribute[]): Array<{ name: string, value: RawBuilder<unknown>, about?: string }> {
  const base = BASE_COLUMNS.map((name) => ({ name, value: name === 'start_at' ? sql`lower(s.period)` : name === 'end_at' ? sql`upper(s.period)` : sql.ref(`s.${name}`) }))
  const taken = new Set(BASE_COLUMNS)
  return [...base, ...declared.map((a) => {
    let name = a.name
    while (taken.has(name)) name = `${name}_attribute`
    taken.add(name)
    const about = `${a.description !== undefined ? `${a.description} ` : ''}(attribute ${a.name}, ${a.type}; NULL when absent or of another type)`
    return { name, value: attributeValue({ attribute: a.name, as: a.type }, sql.ref('s.attributes')), about }
  })]
}

/**
 * Stores a new version, set by the account `by` (its id; recorded as its e-mail) (the next number; `expected` is the current one the writer saw, 0 for
 * none: another writer in between makes it a conflict, undefined), and in the same transaction
 * makes the organisation's typed view again. The indexes come after (createIndexes).
 */
export async function insertSchema (db: Kysely<Database>, organisation: string, schema: Record<string, unknown>, declared: DeclaredAttribute[], by: string, expected: number | undefined): Promise<AttributeSchemaRow | undefined> {
  return await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('attribute_schemas'), hashtext(${organisation}))`.execute(trx)
    const current = (await currentVersion(trx, organisation)) ?? 0
    if (expected !== undefined && expected !== current) return undefined
    const { rows } = await sql<AttributeSchemaRow>`INSERT INTO attribute_schemas AS a (organisation, version, schema, set_by)
      VALUES (${organisation}, ${current + 1}::int, ${JSON.stringify(schema)}::json,
        coalesce((SELECT e.email FROM accounts AS e WHERE e.id = ${by}::uuid), current_user)) RETURNING ${columns}`.execute(trx)
    const view = sql.id(attributesViewName(organisation))
    await sql`DROP VIEW IF EXISTS ${view}`.execute(trx)
    await sql`CREATE VIEW ${view} AS SELECT ${sql.join(viewColumns(declared).map((c) => sql`${c.value} AS ${sql.id(c.name)}`))}
      FROM sources AS s WHERE s.organisation = ${sql.lit(organisation)}`.execute(trx)
    await sql`COMMENT ON VIEW ${view} IS ${sql.lit(`The sources of ${organisation}, a typed column per attribute its schema version ${current + 1} declares (attribute_schemas); made again at each version.`)}`.execute(trx)
    for (const c of viewColumns(declared)) {
      if (c.about !== undefined) await sql`COMMENT ON COLUMN ${sql.id(attributesViewName(organisation), c.name)} IS ${sql.lit(c.about)}`.execute(trx)
    }
    return rows[0]
  })
}

/** The index of each declared attribute, made if missing (without blocking writes on the server backend). */
export async function createIndexes (db: Kysely<Database>, declared: DeclaredAttribute[], concurrently: boolean): Promise<void> {
  for (const a of declared) {
    const name = sql.id(attributeIndexName(a))
    await sql`CREATE INDEX ${sql.raw(concurrently ? 'CONCURRENTLY ' : '')}IF NOT EXISTS ${name} ON sources (${attributeValue({ attribute: a.name, as: a.type }, sql.ref('attributes'))})`.execute(db)
    await sql`COMMENT ON INDEX ${name} IS ${sql.lit(`The declared attribute ${a.name} as ${a.type}: serves filters and sorts on it.`)}`.execute(db)
  }
}

/** The organisation's sources' ids and attributes, in id order after `after`, `limit` of them. */
export async function attributesPage (db: Db, organisation: string, after: string, limit: number): Promise<Array<{ id: string, attributes: Record<string, unknown> }>> {
  const { rows } = await sql<{ id: string, attributes: Record<string, unknown> }>`SELECT s.id, s.attributes FROM sources AS s
    WHERE s.organisation = ${organisation} AND s.id > ${after} ORDER BY s.id LIMIT ${limit}::int`.execute(db)
  return rows
}
