// SQL for writing and reading single sources, as plain functions that take the database (or a
// transaction) first and own no batching and no transaction: the caller decides. Writes are one
// set-based INSERT … SELECT FROM unnest(…) for any number of features and requests, so a
// collection is atomic and costs one round trip; its areas travel as one binary EWKB geometry
// that ST_Dump splits back into rows, in order (db/ewkb.ts). When the database rejects a write,
// diagnoseSources evaluates each constraint per feature (rejections.ts says which one failed).
// Listings are in sources.listing.ts.
import { type Compilable, type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database, Db, Scope } from '../db/database.js'
import { type Area, areasEwkb, multiPolygonEwkb } from '../db/ewkb.js'
import { isoUtc, rangeLower, rangeUpper } from '../db/postgis.js'
import type { ValidFeature } from './geojson.js'
import { type FeatureOutput, conflictSummary, conflictsJoin, featureText, sourceRow, versionRow } from './source-properties.js'

/** A checked feature with the id the service gave it. */
export interface NewSource extends ValidFeature { id: string }

export interface Owner { organisation: string, accountId: string }

/** One request's sources and who wrote them; several go into one INSERT. */
export interface SourceInsert { owner: Owner, sources: NewSource[] }

/** One conflict of a source, seen from it (source_conflicts). */
export interface Conflict {
  id: string
  overlap_m2: number
  overlap_ratio: number
  overlap_start: string
  overlap_end: string
}

/** A source's conflicts as a write reads them back: the first CONFLICTS_LISTED, and the total when there are more. */
export interface ConflictList { conflicts: Conflict[], total?: number }

/** A source as read: its Feature as JSON text (source-properties.ts featureText), and what the service checks of it. */
export interface SourceRow {
  id: string
  organisation: string
  /** `version` counts the versions (1 when created); the ETag names it. */
  version: number
  feature: string
}

/**
 * The sources as rows t(id, feature_id, geom, start_at, end_at, ord). Polygons alone travel as
 * one MultiPolygon whose ST_Dump gives one row per source, zipped with the other arrays. When
 * any area is a MultiPolygon they travel as a GeometryCollection: ST_Dump gives each part with
 * its path ({n} for a Polygon, {n, part} for a MultiPolygon's), grouped back into the area as
 * sent (a one-part MultiPolygon stays one) and joined to the rest by its number.
 */
function unnestSources (sources: NewSource[]) {
  const ids = sql`unnest(${sources.map((s) => s.id)}::text[]), unnest(${sources.map((s) => s.featureId)}::text[])`
  const periods = sql`unnest(${sources.map((s) => s.startAt)}::timestamptz[]), unnest(${sources.map((s) => s.endAt)}::timestamptz[])`
  const attributes = sql`unnest(${sources.map((s) => s.attributes)}::jsonb[])`
  if (sources.every((s) => s.geometry.type === 'Polygon')) {
    return sql`ROWS FROM (
      ${ids},
      ST_Dump(${multiPolygonEwkb(sources.map((s) => s.geometry.coordinates as number[][][]))}::bytea::geometry),
      ${periods}, ${attributes}
    ) WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, attributes, ord)`
  }
  return sql`(SELECT a.id, a.feature_id, g.geom, a.start_at, a.end_at, a.attributes, a.ord
    FROM ROWS FROM (${ids}, ${periods}, ${attributes}) WITH ORDINALITY AS a(id, feature_id, start_at, end_at, attributes, ord)
    JOIN (SELECT d.path[1] AS ord,
        CASE WHEN max(array_length(d.path, 1)) = 1 THEN ST_GeometryN(ST_Collect(d.geom), 1) ELSE ST_Collect(d.geom ORDER BY d.path[2]) END AS geom
      FROM ST_Dump(${areasEwkb(sources.map((s) => s.geometry))}::bytea::geometry) AS d GROUP BY d.path[1]) AS g ON g.ord = a.ord) AS t`
}

/** Inserts the sources of one or more requests in one statement, each row with its own owner. */
export async function insertSources (db: Db, inserts: SourceInsert[]): Promise<void> {
  const all = inserts.flatMap((i) => i.sources)
  const owners = inserts.flatMap((i) => i.sources.map(() => i.owner))
  // The history names each row's creating account (sources_recorded_by's '@created_by').
  await sql`
    WITH writer AS (SELECT set_config('source_registry.account', '@created_by', true) AS who)
    INSERT INTO sources (id, feature_id, organisation, created_by, geom, period, attributes)
    SELECT t.id, t.feature_id, o.organisation, o.created_by, t.geom, tstzrange(t.start_at, t.end_at, '[)'), t.attributes
    FROM writer, ${unnestSources(all)}
    JOIN ROWS FROM (
      unnest(${owners.map((o) => o.organisation)}::text[]),
      unnest(${owners.map((o) => o.accountId)}::uuid[])
    ) WITH ORDINALITY AS o(organisation, created_by, ord) ON o.ord = t.ord`.execute(db)
}

/** The conflicts of those of these sources that have any, as featureText lists them (conflictsJoin). */
const conflictsFrom = (db: Db, ids: RawBuilder<unknown>) => compilable(db, sql<{ id: string, list: string, total: string | null }>`SELECT t.id, k.list, k.total
    FROM ${ids} AS t(id) ${conflictsJoin(sql.ref('t.id'), 'k')} WHERE k.list IS NOT NULL`)

export function selectConflictsOf (db: Db, ids: string[]) {
  return conflictsFrom(db, sql`unnest(${ids}::text[])`)
}

/** The conflicts of one source, as selectConflictsOf: a statement of its own for its generic plan (selectSourceById). */
export function selectConflictsOfOne (db: Db, id: string) {
  return conflictsFrom(db, sql`(VALUES (${id}::text))`)
}

/** The sources that have conflicts, and theirs; a source without any is not in it. */
export type ConflictsById = Map<string, ConflictList>

export function conflictsById (rows: Array<{ id: string, list: string, total: string | null }>): ConflictsById {
  return new Map(rows.map((r) => [r.id, { conflicts: JSON.parse(`[${r.list}]`) as Conflict[], ...(r.total !== null ? { total: Number(r.total) } : {}) }]))
}

export async function conflictsOfSources (db: Db, ids: string[]): Promise<ConflictsById> {
  return conflictsById((await db.executeQuery(selectConflictsOf(db, ids).compile())).rows)
}

class RolledBack extends Error {}

/**
 * Makes the writes of this transaction claims made knowingly, citing these conflict keys
 * (sql/functions/conflict_keys.sql reads them at the end of each write statement): a write that
 * would start a conflict with another organisation's source whose key is not cited fails with
 * sources_conflict_keys.
 */
export async function citeConflictKeys (trx: Db, keys: string[]): Promise<void> {
  await sql`SELECT set_config('source_registry.conflict_keys', ${JSON.stringify(keys)}, true)`.execute(trx)
}

/**
 * Inserts in a transaction, reads the new sources' conflicts, and commits only when `keep`
 * says so (dry runs, and on_conflict=reject when there are conflicts, roll back). The conflict
 * triggers' locks are held until then, so what was read is what a commit would have recorded.
 */
export async function insertSourcesIf (db: Kysely<Database>, insert: SourceInsert, keep: (conflicts: ConflictsById) => boolean, keys?: string[]): Promise<{ conflicts: ConflictsById, kept: boolean }> {
  let conflicts: ConflictsById = new Map()
  try {
    await db.transaction().execute(async (trx) => {
      if (keys !== undefined) await citeConflictKeys(trx, keys)
      await insertSources(trx, [insert])
      conflicts = await conflictsOfSources(trx, insert.sources.map((s) => s.id))
      if (!keep(conflicts)) throw new RolledBack()
    })
    return { conflicts, kept: true }
  } catch (err) {
    if (err instanceof RolledBack) return { conflicts, kept: false }
    throw err
  }
}

export interface SourceDiagnosis {
  index: number
  valid: boolean
  reason: string | null
  location: [number, number] | null
  /** The MultiPolygon's part (0-based) the ring is of; null for a Polygon. */
  part: number | null
  ring: number | null
  inWindow: boolean
  existingId: string | null
  windowStart: string
  windowEnd: string
  /** The attributes' size as PostgreSQL writes their text, when over sources_attributes_fit's limit (else null). */
  attributesBytes: number | null
}

/** Per feature, what the constraints of `sources` say about it (run after an INSERT was rejected). */
export async function diagnoseSources (db: Db, organisation: string, sources: NewSource[]): Promise<SourceDiagnosis[]> {
  const { rows } = await sql<{
    ord: string, valid: boolean, reason: string | null, x: number | null, y: number | null, part: number | null, ring: number | null,
    in_window: boolean, existing_id: string | null, window_start: string, window_end: string, attributes_bytes: number | null
  }>`
    SELECT t.ord, v.valid, v.reason, ST_X(v.location) AS x, ST_Y(v.location) AS y, w.part, w.ring,
      tstzrange(t.start_at, t.end_at, '[)') <@ sources_period_window() AS in_window,
      (SELECT s.id FROM sources AS s
        WHERE s.organisation = ${organisation} AND s.feature_id = t.feature_id AND s.id <> t.id
          AND s.period && tstzrange(t.start_at, t.end_at, '[)')
        ORDER BY s.created_at LIMIT 1) AS existing_id,
      ${isoUtc(rangeLower(sql`sources_period_window()`))} AS window_start,
      ${isoUtc(rangeUpper(sql`sources_period_window()`))} AS window_end,
      CASE WHEN NOT sources_attributes_fit(t.attributes) THEN octet_length(t.attributes::text) END AS attributes_bytes
    FROM ${unnestSources(sources)}
    CROSS JOIN LATERAL ST_IsValidDetail(t.geom) AS v
    -- The ring (of the part, in a MultiPolygon: ST_Dump's path {part}, 1-based) nearest the problem.
    LEFT JOIN LATERAL (
      SELECT d.path[1] - 1 AS part, r.path[1] AS ring FROM ST_Dump(t.geom) AS d CROSS JOIN LATERAL ST_DumpRings(d.geom) AS r
      ORDER BY ST_Distance(ST_Boundary(r.geom), ST_SetSRID(v.location, 4326)) LIMIT 1) AS w ON v.location IS NOT NULL
    ORDER BY t.ord`.execute(db)
  return rows.map((r) => ({
    index: Number(r.ord) - 1,
    valid: r.valid,
    reason: r.reason,
    location: r.x === null || r.y === null ? null : [r.x, r.y],
    part: r.part,
    ring: r.ring,
    inWindow: r.in_window,
    existingId: r.existing_id,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    attributesBytes: r.attributes_bytes
  }))
}

/** A raw statement, compiled for the database it will run on (so that it can be compiled once: db/compiled-query.ts). */
const compilable = <O>(db: Db, query: RawBuilder<O>): Compilable<O> => ({ compile: () => query.compile(db) })

const sourcesWhere = (db: Db, where: RawBuilder<unknown>, output: FeatureOutput) =>
  compilable(db, sql<SourceRow>`SELECT s.id, s.organisation, s.version, ${featureText(sourceRow('s'), conflictSummary('k'), output)} AS feature
    FROM sources AS s ${conflictsJoin(sql.ref('s.id'), 'k')} WHERE ${where}`)

/** The sources with these ids, whatever their organisation (the caller checks the scope), each with its Feature text. */
export function selectSourcesByIds (db: Db, ids: string[], output: FeatureOutput = {}) {
  return sourcesWhere(db, sql`s.id = any(${ids}::text[])`, output)
}

/**
 * One source, as selectSourcesByIds. Its own statement because PostgreSQL keeps the generic plan
 * of `s.id = $1` for a prepared statement, while it plans `any($1)` afresh at every execution (its
 * generic plan is costed for ten ids, so it never wins): the cost is in docs/performance.md.
 */
export function selectSourceById (db: Db, id: string, output: FeatureOutput = {}) {
  return sourcesWhere(db, sql`s.id = ${id}`, output)
}

export async function findSourcesByIds (db: Db, ids: string[]): Promise<SourceRow[]> {
  return (await db.executeQuery(selectSourcesByIds(db, ids).compile())).rows
}

/** Whether a row may be seen in a scope: its organisation's own, or any for admins. */
export const visibleIn = (row: SourceRow | undefined, scope: Scope): SourceRow | undefined =>
  row !== undefined && (scope === 'all' || row.organisation === scope.organisation) ? row : undefined

/** One source, when it exists and is visible in the scope. */
export async function findSourceById (db: Db, id: string, scope: Scope): Promise<SourceRow | undefined> {
  const [row] = await findSourcesByIds(db, [id])
  return visibleIn(row, scope)
}

/**
 * A change of one source: which, in what scope, the versions it may apply to (those If-Match
 * names; undefined for `*`, any), and who makes it ('@' and the account's id: the history records
 * its e-mail, sources_recorded_by in sql/functions/source_versions.sql).
 */
export interface SourceChange { id: string, scope: Scope, versions: number[] | undefined, by: string }

/**
 * What a change sets: a PUT all of it, a PATCH what it names (the rest stays as stored). The
 * attributes as JSON text: `attributes` replaces them (PUT), `attributesPatch` is merged into
 * them by RFC 7396 (PATCH: jsonb_merge_patch).
 */
export interface SourceEdit { featureId?: string, geometry?: Area, startAt?: string, endAt?: string, attributes?: string, attributesPatch?: string }

const scoped = (scope: Scope) => scope === 'all' ? sql`true` : sql`s.organisation = ${scope.organisation}`

/** Names the writer for the history triggers, for this statement's transaction alone. */
const writer = (by: string) => sql`writer AS (SELECT set_config('source_registry.account', ${by}, true) AS who)`

/**
 * Which row a change (an UPDATE or a DELETE) applies to and who makes it, each value a
 * parameter, so that every change runs one SQL text (the store compiles it once). null versions
 * is `If-Match: *`. The scope is named, not implied by a missing organisation, so that a missing
 * one matches nothing.
 */
export type ChangeValues = {
  id: string
  scope: 'all' | 'organisation'
  organisation: string | null
  versions: number[] | null
  by: string
}

/** What an UPDATE sets besides: null keeps what is stored. */
export type UpdateValues = ChangeValues & {
  featureId: string | null
  /** The new area as a one-member GeometryCollection's EWKB (db/ewkb.ts): ST_GeometryN(…, 1) is the Polygon or MultiPolygon sent. */
  geom: Buffer | null
  startAt: string | null
  endAt: string | null
  attributes: string | null
  attributesPatch: string | null
}

export function changeValues (change: SourceChange): ChangeValues {
  return {
    id: change.id,
    scope: change.scope === 'all' ? 'all' : 'organisation',
    organisation: change.scope === 'all' ? null : change.scope.organisation,
    versions: change.versions ?? null,
    by: change.by
  }
}

export function updateValues (change: SourceChange, edit: SourceEdit): UpdateValues {
  return {
    ...changeValues(change),
    featureId: edit.featureId ?? null,
    geom: edit.geometry === undefined ? null : areasEwkb([edit.geometry]),
    startAt: edit.startAt ?? null,
    endAt: edit.endAt ?? null,
    attributes: edit.attributes ?? null,
    attributesPatch: edit.attributesPatch ?? null
  }
}

/**
 * The row a change applies to: this id, in the scope, at a version If-Match names. In the
 * statement's WHERE, so of two changes from one version the second re-checks the row it waited
 * for and changes nothing.
 */
const changeGuard = (v: ChangeValues) => sql`s.id = ${v.id} AND (${v.scope}::text = 'all' OR s.organisation = ${v.organisation}::text)
  AND (${v.versions}::int[] IS NULL OR s.version = any(${v.versions}::int[]))`

/**
 * One UPDATE, one statement: the guard in its WHERE and the writer named in the same statement. It answers the id changed; the store then reads the source as GET does: its
 * conflicts are written by an AFTER trigger at the end of the statement, after RETURNING.
 */
export function updateSourceQuery (v: UpdateValues) {
  return sql<{ id: string }>`WITH ${writer(v.by)}
    UPDATE sources AS s
    SET feature_id = coalesce(${v.featureId}::text, s.feature_id), geom = coalesce(ST_GeometryN(${v.geom}::bytea::geometry, 1), s.geom),
      period = tstzrange(coalesce(${v.startAt}::timestamptz, lower(s.period)), coalesce(${v.endAt}::timestamptz, upper(s.period)), '[)'),
      attributes = jsonb_merge_patch(coalesce(${v.attributes}::jsonb, s.attributes), ${v.attributesPatch}::jsonb)
    FROM writer WHERE ${changeGuard(v)}
    RETURNING s.id`
}

/** Deletes a source (its history stays in source_versions), under the same guard as an UPDATE: the version its deletion is. */
export function deleteSourceQuery (v: ChangeValues) {
  return sql<{ version: number }>`WITH ${writer(v.by)}
    DELETE FROM sources AS s USING writer WHERE ${changeGuard(v)} RETURNING s.version + 1 AS version`
}

/** The current version of a source visible in the scope (after a change that changed nothing: why). */
export async function findVersion (db: Db, id: string, scope: Scope): Promise<number | undefined> {
  const { rows } = await sql<{ version: number }>`SELECT s.version FROM sources AS s WHERE s.id = ${id} AND ${scoped(scope)}`.execute(db)
  return rows[0]?.version
}

/** A source that was deleted, visible in the scope: when, and the version its deletion is. */
export async function findDeletion (db: Db, id: string, scope: Scope): Promise<{ deleted_at: string, version: number } | undefined> {
  const { rows } = await sql<{ deleted_at: string, version: number }>`
    SELECT ${isoUtc(sql`s.recorded_at`)} AS deleted_at, s.version FROM source_versions AS s
    WHERE s.source_id = ${id} AND s.operation = 'delete' AND ${scoped(scope)}`.execute(db)
  return rows[0]
}

/** One version of a source, with the Feature as it was (featureText of the version). */
export interface VersionRow {
  id: string
  version: number
  operation: 'create' | 'update' | 'delete'
  recorded_at: string
  recorded_by: string
  feature: string
}

const versionColumns = (output: FeatureOutput) => sql`s.source_id AS id, s.version, s.operation, ${isoUtc(sql`s.recorded_at`)} AS recorded_at, s.recorded_by,
  ${featureText(versionRow('s'), 'version', output)} AS feature`

/** The versions of a source visible in the scope, newest first, below version `before` when given; limit + 1 of them. */
export async function findVersions (db: Db, id: string, scope: Scope, page: { limit: number, before?: number }, output: FeatureOutput = {}): Promise<VersionRow[]> {
  const before = page.before === undefined ? sql`true` : sql`s.version < ${page.before}::int`
  const { rows } = await sql<VersionRow>`SELECT ${versionColumns(output)} FROM source_versions AS s
    WHERE s.source_id = ${id} AND ${scoped(scope)} AND ${before}
    ORDER BY s.version DESC LIMIT ${page.limit + 1}::int`.execute(db)
  return rows
}

/** The version of a source held at an instant (a deletion when it was deleted by then), if it existed. */
export async function findVersionAt (db: Db, id: string, scope: Scope, at: string, output: FeatureOutput = {}): Promise<VersionRow | undefined> {
  const { rows } = await sql<VersionRow>`SELECT ${versionColumns(output)} FROM source_versions AS s
    WHERE s.source_id = ${id} AND ${scoped(scope)} AND s.recorded_at <= ${at}::timestamptz
    ORDER BY s.version DESC LIMIT 1`.execute(db)
  return rows[0]
}

/**
 * Positions given in a CRS (x = east, y = north, as PostGIS takes them) in longitude, latitude
 * (CRS84), transformed by PostGIS in one statement, in order. ST_Transform works position by
 * position, so transforming the points is transforming the polygons they make.
 */
export async function positionsToLonLat (db: Db, xs: number[], ys: number[], srid: number): Promise<{ lon: number[], lat: number[] }> {
  const { rows } = await sql<{ lon: number[] | null, lat: number[] | null }>`
    SELECT array_agg(ST_X(p) ORDER BY t.ord) AS lon, array_agg(ST_Y(p) ORDER BY t.ord) AS lat
    FROM unnest(${xs}::float8[], ${ys}::float8[]) WITH ORDINALITY AS t(x, y, ord)
    CROSS JOIN LATERAL ST_Transform(ST_SetSRID(ST_MakePoint(t.x, t.y), ${srid}::int), 4326) AS p`.execute(db)
  return { lon: rows[0]?.lon ?? [], lat: rows[0]?.lat ?? [] }
}

/**
 * Erases a source for good: the row (if still there), every version, and every event that names
 * it (its own, and its partners' conflict events), in one transaction, leaving an entry in
 * source_purges (who, what, why). Returns how many versions went (0: no such source, nothing
 * recorded).
 */
export async function purgeSource (db: Kysely<Database>, id: string, reason: string, by: string): Promise<number> {
  return await db.transaction().execute(async (trx) => {
    await sql`SELECT set_config('source_registry.account', ${by}, true)`.execute(trx)
    await sql`DELETE FROM sources WHERE id = ${id}`.execute(trx)
    await sql`DELETE FROM events WHERE subject = ${id} OR data->>'other_id' = ${id}`.execute(trx)
    const { rows } = await sql<{ versions: number }>`
      WITH gone AS (DELETE FROM source_versions WHERE source_id = ${id} RETURNING organisation)
      INSERT INTO source_purges (source_id, organisation, versions, reason, purged_by)
      SELECT ${id}, min(gone.organisation), count(*), ${reason}, ${by} FROM gone HAVING count(*) > 0
      RETURNING versions`.execute(trx)
    return rows[0]?.versions ?? 0
  })
}
