// SQL for sources. A whole FeatureCollection is one set-based INSERT … SELECT FROM unnest(…),
// so it is atomic and costs one round trip whatever the number of features; its polygons travel
// as one binary EWKB MultiPolygon that ST_Dump splits back into rows, in order. When the database
// rejects it, diagnoseSources evaluates each constraint per feature to say which one failed.
import { type Kysely, type Transaction, sql } from 'kysely'
import { Batcher } from '../db/batch.js'
import { param, prepare, queryBuilder } from '../db/compiled.js'
import type { Database } from '../db/database.js'
import { multiPolygonEwkb } from './geojson.js'
import { isoUtc, rangeLower, rangeUpper, stAsGeoJson } from '../db/postgis.js'

type Db = Kysely<Database> | Transaction<Database>

export interface NewSource {
  id: string
  featureId: string
  /** Polygon rings, [lon, lat(, alt)] positions; encoded by multiPolygonEwkb. */
  rings: number[][][]
  startAt: string
  endAt: string
}

export interface Owner { organisation: string, accountId: string }

/** Who may see a source: one organisation, or every organisation (admins). */
export type Scope = { organisation: string } | 'all'

export interface SourceRow {
  id: string
  feature_id: string
  organisation: string
  geometry: string
  start_at: string
  end_at: string
  created_at: string
  area_m2: number
}

function unnestSources (sources: NewSource[]) {
  return sql`ROWS FROM (
    unnest(${sources.map((s) => s.id)}::text[]),
    unnest(${sources.map((s) => s.featureId)}::text[]),
    ST_Dump(${multiPolygonEwkb(sources.map((s) => s.rings))}::bytea::geometry),
    unnest(${sources.map((s) => s.startAt)}::timestamptz[]),
    unnest(${sources.map((s) => s.endAt)}::timestamptz[])
  ) WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, ord)`
}

export async function insertSources (db: Db, owner: Owner, sources: NewSource[]): Promise<void> {
  await sql`
    INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT t.id, t.feature_id, ${owner.organisation}, ${owner.accountId}::uuid, t.geom, tstzrange(t.start_at, t.end_at, '[)')
    FROM ${unnestSources(sources)}`.execute(db)
}

export interface SourceInsert { owner: Owner, sources: NewSource[] }

/** Several requests' sources in one statement (one transaction): each row with its own owner. */
async function insertSourcesOfMany (db: Db, inserts: SourceInsert[]): Promise<void> {
  const all = inserts.flatMap((i) => i.sources)
  const owners = inserts.flatMap((i) => i.sources.map(() => i.owner))
  await sql`
    INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT t.id, t.feature_id, o.organisation, o.created_by, t.geom, tstzrange(t.start_at, t.end_at, '[)')
    FROM ${unnestSources(all)}
    JOIN ROWS FROM (
      unnest(${owners.map((o) => o.organisation)}::text[]),
      unnest(${owners.map((o) => o.accountId)}::uuid[])
    ) WITH ORDINALITY AS o(organisation, created_by, ord) ON o.ord = t.ord`.execute(db)
}

export type SourceWriter = (insert: SourceInsert) => Promise<void>

/**
 * insertSources, with concurrent requests batched into one INSERT once `maxInFlight` are
 * running (db/batch.ts), up to `maxFeatures` features per statement. A batch is all or
 * nothing, while each request must be on its own: when a batch of several fails, each of its
 * requests is inserted again alone, in the order they reached the writer, and gets its own
 * outcome (of two requests that conflict, the one that reached it first wins).
 */
export function sourceWriter (db: Db, opts: { maxInFlight: number, maxFeatures: number }): SourceWriter {
  const batcher = new Batcher<SourceInsert, { error: unknown } | undefined>(async (inserts) => {
    if (inserts.length > 1) {
      try {
        await insertSourcesOfMany(db, inserts)
        return inserts.map(() => undefined)
      } catch {
        // One of them (or the database) failed; the inserts one by one below say which.
      }
    }
    const outcomes = []
    for (const i of inserts) {
      try {
        await insertSources(db, i.owner, i.sources)
        outcomes.push(undefined)
      } catch (error) {
        outcomes.push({ error })
      }
    }
    return outcomes
  }, { maxInFlight: opts.maxInFlight, maxWeight: opts.maxFeatures, weight: (i) => i.sources.length })
  return async (insert) => {
    const outcome = await batcher.submit(insert)
    if (outcome !== undefined) throw outcome.error
  }
}

export interface SourceDiagnosis {
  index: number
  valid: boolean
  reason: string | null
  location: [number, number] | null
  ring: number | null
  inWindow: boolean
  existingId: string | null
  windowStart: string
  windowEnd: string
}

/** Per feature, what the constraints of `sources` say about it (run after an INSERT was rejected). */
export async function diagnoseSources (db: Db, organisation: string, sources: NewSource[]): Promise<SourceDiagnosis[]> {
  const { rows } = await sql<{
    ord: string, valid: boolean, reason: string | null, x: number | null, y: number | null, ring: number | null,
    in_window: boolean, existing_id: string | null, window_start: string, window_end: string
  }>`
    SELECT t.ord, v.valid, v.reason, ST_X(v.location) AS x, ST_Y(v.location) AS y,
      CASE WHEN v.location IS NOT NULL THEN (
        SELECT r.path[1] FROM ST_DumpRings(t.geom) AS r
        ORDER BY ST_Distance(ST_Boundary(r.geom), ST_SetSRID(v.location, 4326)) LIMIT 1) END AS ring,
      tstzrange(t.start_at, t.end_at, '[)') <@ sources_period_window() AS in_window,
      (SELECT s.id FROM sources AS s
        WHERE s.organisation = ${organisation} AND s.feature_id = t.feature_id
          AND s.period && tstzrange(t.start_at, t.end_at, '[)')
        ORDER BY s.created_at LIMIT 1) AS existing_id,
      ${isoUtc(rangeLower(sql`sources_period_window()`))} AS window_start,
      ${isoUtc(rangeUpper(sql`sources_period_window()`))} AS window_end
    FROM ${unnestSources(sources)}
    CROSS JOIN LATERAL ST_IsValidDetail(t.geom) AS v
    ORDER BY t.ord`.execute(db)
  return rows.map((r) => ({
    index: Number(r.ord) - 1,
    valid: r.valid,
    reason: r.reason,
    location: r.x === null || r.y === null ? null : [r.x, r.y],
    ring: r.ring,
    inWindow: r.in_window,
    existingId: r.existing_id,
    windowStart: r.window_start,
    windowEnd: r.window_end
  }))
}

// GET and DELETE by id, compiled once (db/compiled.ts). Reads take a list of ids (one statement
// for one id or many, see sourceReader); a delete takes one id, with an organisation or for
// admins without.
const selectSourcesById = prepare<{ ids: string[] }, SourceRow>(queryBuilder.selectFrom('sources')
  .select((eb) => [
    'id', 'feature_id', 'organisation',
    stAsGeoJson(eb.ref('geom')).as('geometry'),
    isoUtc(rangeLower(eb.ref('period'))).as('start_at'),
    isoUtc(rangeUpper(eb.ref('period'))).as('end_at'),
    isoUtc(eb.ref('created_at')).as('created_at'),
    'area_m2'
  ])
  .where('id', '=', sql<string>`any(${param('ids')}::text[])`))

async function findSourcesById (db: Db, ids: string[]): Promise<SourceRow[]> {
  return (await db.executeQuery(selectSourcesById({ ids }))).rows
}

const visible = (row: SourceRow | undefined, scope: Scope): SourceRow | undefined =>
  row !== undefined && (scope === 'all' || row.organisation === scope.organisation) ? row : undefined

export type SourceReader = (id: string, scope: Scope) => Promise<SourceRow | undefined>

/**
 * Reads one source by id in a scope, with concurrent reads batched into one query once
 * `maxInFlight` are running (db/batch.ts). The organisation is checked on the row, so requests
 * of different organisations share a batch and a source outside the scope reads as not found.
 */
export function sourceReader (db: Db, opts: { maxInFlight: number, maxBatch: number }): SourceReader {
  const batcher = new Batcher<string, SourceRow | undefined>(async (ids) => {
    const rows = new Map((await findSourcesById(db, ids)).map((r) => [r.id, r]))
    return ids.map((id) => rows.get(id))
  }, { maxInFlight: opts.maxInFlight, maxWeight: opts.maxBatch })
  return async (id, scope) => visible(await batcher.submit(id), scope)
}

function deleteById (scoped: boolean) {
  return queryBuilder.deleteFrom('sources')
    .where('id', '=', param('id'))
    .$if(scoped, (q) => q.where('organisation', '=', param('organisation')))
}
const deleteScoped = prepare<{ id: string, organisation: string }, never>(deleteById(true))
const deleteAny = prepare<{ id: string }, never>(deleteById(false))

/** Returns false when no source with that id is visible in the scope. */
export async function deleteSource (db: Db, id: string, scope: Scope): Promise<boolean> {
  const query = scope === 'all' ? deleteAny({ id }) : deleteScoped({ id, organisation: scope.organisation })
  return ((await db.executeQuery(query)).numAffectedRows ?? 0n) > 0n
}
