// Conflicts in SQL: the listing and one conflict as GeoJSON Feature text made by PostgreSQL, a
// party's stance changed by one UPDATE (the transition rule and the history are the database's:
// sql/functions/conflict_states.sql), the notes and the history of stances. Another
// organisation's source is read only for the overlap: its id and the intersection.
import { type RawBuilder, sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { isoUtc, stAsGeoJson } from '../db/postgis.js'
import type { ConflictState, Stance } from './conflicts.schema.js'
import { type FilterExpr, type FilterRow, filterSql } from '../sources/filter.sql.js'
import type { SearchBox } from '../sources/search-box.js'

export interface ConflictListInput {
  scope: Scope
  /** The caller's organisation: which party is its own. */
  organisation: string
  state: ConflictState | 'all' | undefined
  sourceId?: string
  bbox?: [number, number, number, number]
  from?: string
  to?: string
  limit: number
  after?: string
  /** A checked CQL2 filter over CONFLICT_QUERYABLES. */
  filter?: FilterExpr
}

/** The parties of one conflict, for deciding who may act on it. */
export interface ConflictParties {
  id: string
  sourceA: string
  sourceB: string
  organisationA: string
  organisationB: string
  stanceA: Stance
  stanceB: Stance
  /** The stances each party may move to now (conflict_stance_transitions; none once resolved). */
  allowedA: Stance[]
  allowedB: Stance[]
  version: number
  resolved: boolean
}

export interface ConflictText { id: string, version: number, feature: string }

const scoped = (scope: Scope) => scope === 'all' ? sql`true` : sql`(c.organisation_a = ${scope.organisation} OR c.organisation_b = ${scope.organisation})`

/** The overlap of a pair while it lasts (both sources are there). */
const overlap = sql`lonlat_polygonal_overlay(sa.geom, sb.geom)`

const party = (side: 'a' | 'b', organisation: string): RawBuilder<unknown> => {
  const col = (name: string) => sql.ref(`c.${name}_${side}`)
  return sql`json_build_object('source_id', ${sql.ref(`c.source_${side}`)}, 'own', ${col('organisation')} = ${organisation},
    'stance', ${col('stance')}, 'reason', ${col('reason')}, 'overlap_ratio', ${col('overlap_ratio')})`
}

/** A conflict as GeoJSON Feature text (conflicts.schema.ts ConflictSchema); null members left out of its properties. */
const featureText = (organisation: string): RawBuilder<string> => sql<string>`json_build_object('type', 'Feature', 'id', c.id,
    'geometry', CASE WHEN c.resolved_at IS NULL THEN (${stAsGeoJson(overlap)})::json END,
    'properties', json_strip_nulls(json_build_object('state', c.state,
      'parties', json_build_array(${party('a', organisation)}, ${party('b', organisation)}),
      'overlap_m2', c.overlap_m2,
      'overlap_start', ${isoUtc(sql`lower(c.overlap_period)`)}, 'overlap_end', ${isoUtc(sql`upper(c.overlap_period)`)},
      'started_at', ${isoUtc(sql`c.started_at`)}, 'resolved_at', ${isoUtc(sql`c.resolved_at`)}, 'resolution', c.resolution,
      'version', c.version, 'updated_at', ${isoUtc(sql`c.updated_at`)})))::text`

const envelope = ({ west, south, east, north }: { west: number, south: number, east: number, north: number }) =>
  sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
/** Both sources' boxes meet the literal's (their GiST index), then the exact test on the overlap. */
const meets = (literal: RawBuilder<unknown>): RawBuilder<boolean> => sql<boolean>`(sa.geom && ${literal} AND sb.geom && ${literal})`
const intersectsBox = (box: SearchBox): RawBuilder<boolean> => sql<boolean>`(${meets(envelope(box))} AND ST_Intersects(${overlap}, ${envelope(box)}))`

const COLUMNS: Record<string, RawBuilder<unknown>> = {
  state: sql`c.state`,
  overlap_m2: sql`c.overlap_m2`,
  overlap_start: sql`lower(c.overlap_period)`,
  overlap_end: sql`upper(c.overlap_period)`,
  started_at: sql`c.started_at`,
  resolved_at: sql`c.resolved_at`,
  updated_at: sql`c.updated_at`,
  version: sql`c.version`,
  resolution: sql`c.resolution`,
  source_a: sql`c.source_a`,
  source_b: sql`c.source_b`,
  geometry: sql`(CASE WHEN c.resolved_at IS NULL THEN ${overlap} END)`
}

/** A conflict as a CQL2 filter tests it (CONFLICT_QUERYABLES). */
const CONFLICT_ROW: FilterRow = {
  value: (name) => {
    const column = COLUMNS[name]
    if (column === undefined) throw new Error(`conflict queryable ${name} has no column`)
    return column
  },
  geomMeets: meets,
  period: { column: sql`c.overlap_period`, begin: 'overlap_start', end: 'overlap_end' }
}

const FROM = sql`FROM conflicts AS c
  LEFT JOIN sources AS sa ON sa.id = c.source_a AND c.resolved_at IS NULL
  LEFT JOIN sources AS sb ON sb.id = c.source_b AND c.resolved_at IS NULL`

/** A page of conflicts in id order (one more than `limit` read: whether there is a next page). */
export async function listConflicts (db: Db, q: ConflictListInput): Promise<ConflictText[]> {
  return (await listConflictsQuery(q).execute(db)).rows
}

/** The statement of listConflicts (bench/conflict-states.mjs sends the same to pgbench). */
export function listConflictsQuery (q: ConflictListInput): RawBuilder<ConflictText> {
  const where: RawBuilder<unknown>[] = [scoped(q.scope)]
  if (q.state === undefined) where.push(sql`c.resolved_at IS NULL`)
  else if (q.state !== 'all') where.push(sql`c.state = ${q.state}`)
  if (q.sourceId !== undefined) where.push(sql`(c.source_a = ${q.sourceId} OR c.source_b = ${q.sourceId})`)
  if (q.bbox !== undefined) {
    const [w, s, e, n] = q.bbox
    const env = sql`ST_MakeEnvelope(${w}::float8, ${s}::float8, ${e}::float8, ${n}::float8, 4326)`
    where.push(sql`c.resolved_at IS NULL AND sa.geom && ${env} AND sb.geom && ${env} AND ST_Intersects(${overlap}, ${env})`)
  }
  if (q.filter !== undefined) where.push(filterSql(q.filter, intersectsBox, CONFLICT_ROW))
  if (q.from !== undefined || q.to !== undefined) where.push(sql`c.overlap_period && tstzrange(${q.from ?? null}::timestamptz, ${q.to ?? null}::timestamptz, '[]')`)
  if (q.after !== undefined) where.push(sql`c.id > ${q.after}`)
  return sql<ConflictText>`SELECT c.id, c.version, ${featureText(q.organisation)} AS feature ${FROM}
    WHERE ${sql.join(where, sql` AND `)} ORDER BY c.id LIMIT ${q.limit + 1}`
}

/** One conflict in the scope, as Feature text. */
export async function findConflict (db: Db, id: string, scope: Scope, organisation: string): Promise<ConflictText | undefined> {
  const rows = await sql<ConflictText>`SELECT c.id, c.version, ${featureText(organisation)} AS feature ${FROM}
    WHERE c.id = ${id} AND ${scoped(scope)}`.execute(db)
  return rows.rows[0]
}

const allowedFrom = (stance: RawBuilder<unknown>): RawBuilder<Stance[]> => sql<Stance[]>`CASE WHEN c.resolved_at IS NULL
    THEN ARRAY(SELECT t.to_stance FROM conflict_stance_transitions AS t WHERE t.from_stance = ${stance} ORDER BY t.to_stance) ELSE '{}' END`

/** Who the parties are, their stances and where each may go, the version: what deciding a change needs (one read). */
export async function findParties (db: Db, id: string, scope: Scope): Promise<ConflictParties | undefined> {
  const rows = await sql<ConflictParties>`SELECT c.id, c.source_a AS "sourceA", c.source_b AS "sourceB", c.organisation_a AS "organisationA",
      c.organisation_b AS "organisationB", c.stance_a AS "stanceA", c.stance_b AS "stanceB",
      ${allowedFrom(sql`c.stance_a`)} AS "allowedA", ${allowedFrom(sql`c.stance_b`)} AS "allowedB",
      c.version, c.resolved_at IS NOT NULL AS resolved
    FROM conflicts AS c WHERE c.id = ${id} AND ${scoped(scope)}`.execute(db)
  return rows.rows[0]
}

export interface StanceChange {
  id: string
  /** The party the caller names (body.source_id); null: the caller's organisation's side. */
  named: string | null
  /** Who acts: the conflicts it may see, and whether it may act for either party (admin). */
  scope: Scope
  /** The caller's organisation: whose side it is, and which party is its own in the Feature answered. */
  organisation: string
  stance: Stance
  reason: string | null
  versions: number[] | null
  by: string
}

/**
 * One statement: the UPDATE of the caller's party's stance and reason, when the caller may act
 * for that party, at a version If-Match names, while unresolved, by a move the transition table
 * allows, with the writer named for the history; and the conflict as changed, as Feature text
 * (what GET answers). Undefined when any of that did not hold: the caller reads the parties
 * (findParties) to say which.
 */
export async function updateStance (db: Db, c: StanceChange): Promise<ConflictText | undefined> {
  return (await updateStanceQuery(c).execute(db)).rows[0]
}

/** The statement of updateStance (bench/conflict-states.mjs sends the same to pgbench). */
export function updateStanceQuery (c: StanceChange): RawBuilder<ConflictText> {
  const org = c.organisation
  const admin = c.scope === 'all'
  // The side the caller acts for: the named source's, if its organisation is the caller's (or an
  // admin acts); else the caller's organisation's, when it holds exactly one side.
  const side = sql`CASE WHEN ${c.named}::text IS NULL THEN
        CASE WHEN c.organisation_a = ${org} AND c.organisation_b <> ${org} THEN 'a'
          WHEN c.organisation_b = ${org} AND c.organisation_a <> ${org} THEN 'b' END
      WHEN c.source_a = ${c.named} AND (${admin} OR c.organisation_a = ${org}) THEN 'a'
      WHEN c.source_b = ${c.named} AND (${admin} OR c.organisation_b = ${org}) THEN 'b' END`
  return sql<ConflictText>`WITH writer AS (SELECT set_config('source_registry.account', ${c.by}, true) AS who),
    target AS (SELECT c.id, ${side} AS side FROM conflicts AS c WHERE c.id = ${c.id} AND ${scoped(c.scope)}),
    changed AS (UPDATE conflicts AS c SET
      stance_a = CASE WHEN t.side = 'a' THEN ${c.stance} ELSE c.stance_a END, reason_a = CASE WHEN t.side = 'a' THEN ${c.reason}::text ELSE c.reason_a END,
      stance_b = CASE WHEN t.side = 'b' THEN ${c.stance} ELSE c.stance_b END, reason_b = CASE WHEN t.side = 'b' THEN ${c.reason}::text ELSE c.reason_b END
    FROM writer, target AS t
    WHERE c.id = t.id AND t.side IS NOT NULL AND c.resolved_at IS NULL AND (${c.versions}::int[] IS NULL OR c.version = any(${c.versions}::int[]))
      AND EXISTS (SELECT FROM conflict_stance_transitions AS m
        WHERE m.from_stance = CASE t.side WHEN 'a' THEN c.stance_a ELSE c.stance_b END AND m.to_stance = ${c.stance})
    RETURNING c.*)
    SELECT c.id, c.version, ${featureText(org)} AS feature ${sql`FROM changed AS c
      LEFT JOIN sources AS sa ON sa.id = c.source_a AND c.resolved_at IS NULL
      LEFT JOIN sources AS sb ON sb.id = c.source_b AND c.resolved_at IS NULL`}`
}

export interface NoteRow { id: number, body: string, organisation: string, author: string, created_at: string }

export async function listNotes (db: Db, conflictId: string): Promise<NoteRow[]> {
  const rows = await sql<NoteRow>`SELECT n.id::int AS id, n.body, n.organisation, n.author, ${isoUtc(sql`n.created_at`)} AS created_at
    FROM conflict_notes AS n WHERE n.conflict_id = ${conflictId} ORDER BY n.id`.execute(db)
  return rows.rows
}

export async function insertNote (db: Db, conflictId: string, organisation: string, by: string, body: string): Promise<NoteRow> {
  const rows = await sql<NoteRow>`WITH writer AS (SELECT set_config('source_registry.account', ${by}, true) AS who)
    INSERT INTO conflict_notes (conflict_id, organisation, author, body)
    SELECT ${conflictId}, ${organisation}, sources_recorded_by(NULL), ${body} FROM writer
    RETURNING id::int AS id, body, organisation, author, ${isoUtc(sql`created_at`)} AS created_at`.execute(db)
  return rows.rows[0] as NoteRow
}

export interface StanceRow { source_id: string, organisation: string, from: Stance | null, to: Stance, reason: string | null, version: number, recorded_at: string, recorded_by: string }

export async function listStances (db: Db, conflictId: string): Promise<StanceRow[]> {
  const rows = await sql<StanceRow>`SELECT s.source_id, s.organisation, s.from_stance AS "from", s.to_stance AS "to", s.reason, s.version,
      ${isoUtc(sql`s.recorded_at`)} AS recorded_at, s.recorded_by
    FROM conflict_stances AS s WHERE s.conflict_id = ${conflictId} ORDER BY s.seq`.execute(db)
  return rows.rows
}

export interface CarvePreview {
  version: number
  /** The unresolved conflicts of the source that the carve-out ends (those named, or all). */
  conflicts: string[]
  /** GeoJSON text of what would remain; null when nothing would. */
  geometry: string | null
  area_m2: number
  area_lost_m2: number
}

/** What a carve-out of the source would leave, in the scope; undefined when there is no such source. */
export async function carvePreview (db: Db, id: string, scope: Scope, ids: string[] | null): Promise<CarvePreview | undefined> {
  const rows = await sql<CarvePreview>`SELECT s.version,
      ARRAY(SELECT c.id FROM conflicts AS c WHERE (c.source_a = s.id OR c.source_b = s.id) AND c.resolved_at IS NULL
        AND (${ids}::text[] IS NULL OR c.id = ANY (${ids}::text[])) ORDER BY c.id) AS conflicts,
      ${stAsGeoJson(sql`k.g`)} AS geometry, coalesce(lonlat_area_m2(k.g), 0) AS area_m2, s.area_m2 - coalesce(lonlat_area_m2(k.g), 0) AS area_lost_m2
    FROM sources AS s
    CROSS JOIN LATERAL (SELECT sources_carve(s.geom, sources_carve_cut(s.id, ${ids}::text[]), sources_conflict_tolerance_m()) AS g) AS k
    WHERE s.id = ${id} AND ${scope === 'all' ? sql`true` : sql`s.organisation = ${scope.organisation}`}`.execute(db)
  return rows.rows[0]
}

/**
 * The carve-out as one UPDATE at a version If-Match names, with the writer and the resolution
 * (carved) named for the triggers; the pairs it ends are resolved by them. Only when every id
 * named is an unresolved conflict of the source (or, for all, when it has one) and something
 * remains: the id changed, or undefined otherwise (carvePreview then tells why).
 */
export async function carveSource (db: Db, id: string, scope: Scope, ids: string[] | null, versions: number[] | null, by: string): Promise<string | undefined> {
  return (await carveQuery(id, scope, ids, versions, by).execute(db)).rows[0]?.id
}

/** The statement of carveSource (bench/conflict-states.mjs sends the same to pgbench). */
export function carveQuery (id: string, scope: Scope, ids: string[] | null, versions: number[] | null, by: string): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`WITH writer AS (SELECT set_config('source_registry.account', ${by}, true) AS who,
        set_config('source_registry.resolution', 'carved', true) AS how)
    UPDATE sources AS s SET geom = k.g
    FROM writer, LATERAL (SELECT sources_carve(t.geom, sources_carve_cut(t.id, ${ids}::text[]), sources_conflict_tolerance_m()) AS g
      FROM sources AS t WHERE t.id = ${id}) AS k
    WHERE s.id = ${id} AND ${scope === 'all' ? sql`true` : sql`s.organisation = ${scope.organisation}`}
      AND (${versions}::int[] IS NULL OR s.version = any(${versions}::int[])) AND k.g IS NOT NULL
      AND (SELECT count(*) FROM conflicts AS c WHERE (c.source_a = s.id OR c.source_b = s.id) AND c.resolved_at IS NULL
        AND (${ids}::text[] IS NULL OR c.id = ANY (${ids}::text[])))
        >= CASE WHEN ${ids}::text[] IS NULL THEN 1 ELSE (SELECT count(DISTINCT n) FROM unnest(${ids}::text[]) AS n) END
    RETURNING s.id`
}
