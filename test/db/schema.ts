// A database's schema as the catalogs show it, for tests that hold two databases to be the same
// (an upgraded one and a new one; one started from the embedded template and one migrated plainly).
import { type Kysely, sql } from 'kysely'
import type { Database } from '../../src/db/database.js'

// Objects of the public schema that no extension owns, each as one line, per kind.
const OWN = (oid: string) => `NOT EXISTS (SELECT 1 FROM pg_depend AS e WHERE e.objid = ${oid} AND e.deptype = 'e')`
export const CATALOG: Record<string, string> = {
  extensions: 'SELECT extname, extversion FROM pg_extension',
  functions: `SELECT p.oid::regprocedure AS name, pg_get_functiondef(p.oid) AS def, obj_description(p.oid, 'pg_proc') AS comment
    FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace AND ${OWN('p.oid')}`,
  relations: `SELECT c.relname, c.relkind, obj_description(c.oid, 'pg_class') AS comment,
      CASE c.relkind WHEN 'v' THEN pg_get_viewdef(c.oid) WHEN 'i' THEN pg_get_indexdef(c.oid) END AS def
    FROM pg_class AS c LEFT JOIN pg_index AS i ON i.indexrelid = c.oid
    WHERE c.relnamespace = 'public'::regnamespace AND ${OWN('coalesce(i.indrelid, c.oid)')}`,
  // By position, not attnum: a dropped column leaves a gap in attnum that no schema shows.
  columns: `SELECT c.relname, row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position, a.attname,
      format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, a.attgenerated, pg_get_expr(d.adbin, d.adrelid) AS "default",
      col_description(c.oid, a.attnum) AS comment
    FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p', 'f') AND a.attnum > 0 AND NOT a.attisdropped AND ${OWN('c.oid')}`,
  constraints: `SELECT conrelid::regclass AS relation, conname, pg_get_constraintdef(oid) AS def, obj_description(oid, 'pg_constraint') AS comment
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND ${OWN('conrelid')}`,
  triggers: `SELECT tgrelid::regclass AS relation, tgname, pg_get_triggerdef(oid) AS def, obj_description(oid, 'pg_trigger') AS comment
    FROM pg_trigger WHERE NOT tgisinternal`
}

export type Schema = Record<string, string[]>

export async function schemaOf (db: Kysely<Database>): Promise<Schema> {
  const schema: Schema = {}
  for (const [kind, query] of Object.entries(CATALOG)) {
    schema[kind] = (await sql.raw<Record<string, unknown>>(query).execute(db)).rows.map((r) => JSON.stringify(r)).sort()
  }
  return schema
}
