// The one door from the sources and items routes to storage: what they need, on the app's
// database (or a replica's). Every hot query is compiled once (db/compiled-query.ts) and only
// bound to each request's values: GET by id, listings (once per shape of their input), a
// change's UPDATE and the source read back after it, a DELETE. With `batching`, concurrent reads and
// writes also go out together (db/batcher.ts) once as many as it allows are running; the
// answers are the same (npm test runs test/sources both ways).
import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type { Database, Db, Scope } from '../db/database.js'
import { Batcher } from '../db/batcher.js'
import { classifyDbError } from '../db/errors.js'
import type { BinaryRows } from '../db/copy-binary.js'
import { compileByShape, compileOnce, placeholder, queryBuilder } from '../db/compiled-query.js'
import {
  type ChangeValues, type ConflictsById, type NewSource, type SourceChange, type SourceDiagnosis, type SourceEdit, type SourceInsert, type SourceRow, type UpdateValues, type VersionRow,
  changeValues, citeConflictKeys, conflictsById, deleteSourceQuery, diagnoseSources, findDeletion, findVersion, findVersionAt, findVersions, insertSources, insertSourcesIf,
  positionsToLonLat, selectConflictsOf, selectConflictsOfOne, selectSourceById, selectSourcesByIds, updateSourceQuery, updateValues, visibleIn
} from './sources.repository.js'
import { LIST_INPUT_SHAPE_KEYS, type AttributeTypes, type FeatureRow, type ListInput, type ListedPage, type RangePage, type RunListing, type SourcesExtent, attributeTypes, canCopyRanges, countSources, listFirstSources, listRangeBinary, pageAttributeTypesQuery, listRange, listRangeRows, listSources, rangeBounds, sourcesExtent } from './sources.listing.js'
import { geometryProblems } from './filter.sql.js'
import type { FeatureOutput } from './source-properties.js'

export interface SourceStore {
  /** With an output (another CRS), its Feature written so (compiled once per output, not batched). */
  find: (id: string, scope: Scope, output?: FeatureOutput) => Promise<SourceRow | undefined>
  /** Stores the sources and answers their conflicts as recorded by the database. */
  insert: (insert: SourceInsert) => Promise<ConflictsById>
  /**
   * Stores the sources in a transaction that commits only when `keep` says so (dry runs, and
   * on_conflict=reject when there are conflicts, roll back); with `keys`, made knowingly, citing
   * these conflict keys (citeConflictKeys).
   */
  insertIf: (insert: SourceInsert, keep: (conflicts: ConflictsById) => boolean, keys?: string[]) => Promise<{ conflicts: ConflictsById, kept: boolean }>
  /** Per feature, what the constraints of `sources` say about it (after a write was rejected). */
  diagnose: (organisation: string, sources: NewSource[]) => Promise<SourceDiagnosis[]>
  /**
   * Changes a source at a version If-Match names (one UPDATE); the source as GET returns it,
   * conflicts included, or undefined when nothing changed (then `version` and `deletion` say why).
   * With `keys`, made knowingly, citing these conflict keys, in a transaction of its own.
   */
  update: (change: SourceChange, edit: SourceEdit, keys?: string[]) => Promise<SourceRow | undefined>
  /** Deletes a source at a version If-Match names (its history stays): the version its deletion is, or undefined. */
  delete: (change: SourceChange) => Promise<number | undefined>
  /** The current version of a source, read on the primary. */
  version: (id: string, scope: Scope) => Promise<number | undefined>
  /** When a deleted source was deleted, and the version its deletion is. */
  deletion: (id: string, scope: Scope) => Promise<{ deleted_at: string, version: number } | undefined>
  /** Its versions, newest first (findVersions). */
  versions: (id: string, scope: Scope, page: { limit: number, before?: number }, output?: FeatureOutput) => Promise<VersionRow[]>
  /** The version held at an instant (findVersionAt). */
  versionAt: (id: string, scope: Scope, at: string, output?: FeatureOutput) => Promise<VersionRow | undefined>
  /** Positions in a CRS (x east, y north) as longitude, latitude (positionsToLonLat). */
  toLonLat: (xs: number[], ys: number[], srid: number) => Promise<{ lon: number[], lat: number[] }>
  /** A page of a listing (listSources). */
  list: (input: ListInput) => Promise<ListedPage>
  /** A first page and numberMatched (listFirstSources). */
  listFirst: (input: ListInput) => Promise<{ page: ListedPage, matched: number | undefined }>
  /** The ends of the next id ranges of input.page.limit matching sources, and whether more follow (rangeBounds). */
  rangeBounds: (input: ListInput) => Promise<{ bounds: string[], more: boolean }>
  /** A bulk export's range: its next Features (listRange). */
  listRange: (input: ListInput) => Promise<RangePage>
  /** The same, each Feature in parts (listRangeRows): for the FlatGeobuf export. */
  listRangeRows: (input: ListInput) => Promise<RangePage<FeatureRow[]>>
  /** Whether ranges like input's can be read as binary rows (canCopyRanges: the server backend). */
  canCopyRanges: (input: ListInput) => boolean
  /** The same parts as binary rows through COPY (listRangeBinary): for the FlatGeobuf export, where canCopyRanges. */
  listRangeBinary: (input: ListInput) => Promise<RangePage<BinaryRows>>
  /** The matches' attributes and the JSON types of their values (attributeTypes): a bulk export's columns. */
  attributeTypes: (input: ListInput) => Promise<AttributeTypes[]>
  /** The same for one page's sources (pageAttributeTypesQuery): a streamed CSV or FlatGeobuf page's columns. */
  pageAttributeTypes: (input: ListInput) => Promise<AttributeTypes[]>
  /** How many sources match, undefined beyond input.cap (countSources). */
  count: (input: ListInput) => Promise<number | undefined>
  /** The bounding box and time span of the sources in a scope. */
  extent: (scope: Scope) => Promise<SourcesExtent>
  /** Why each WKT geometry of a filter is invalid, or null where it is valid (geometryProblems). */
  geometryProblems: (wkts: string[]) => Promise<Array<string | null>>
}

/** Concurrent requests sent together: at most this many statements of each kind running at once. */
export interface Batching {
  readsInFlight: number
  writesInFlight: number
  /** Features in one INSERT at most (a larger single request still goes alone). */
  maxFeatures: number
}

const selectByIds = compileOnce({ ids: [] as string[] }, (p) => selectSourcesByIds(queryBuilder, p.ids))
const selectById = compileOnce({ id: placeholder('id') }, (p) => selectSourceById(queryBuilder, p.id))
/** GET by id in another output (a CRS): compiled once per output; the outputs are the few CRSs served. */
const selectByIdIn = new Map<string, (p: { id: string }) => CompiledQuery<SourceRow>>()
function selectByIdOutput (output: FeatureOutput): (p: { id: string }) => CompiledQuery<SourceRow> {
  const key = JSON.stringify(output)
  let compiled = selectByIdIn.get(key)
  if (compiled === undefined) selectByIdIn.set(key, compiled = compileOnce({ id: placeholder('id') }, (p) => selectSourceById(queryBuilder, p.id, output)))
  return compiled
}
const isDefault = (output: FeatureOutput | undefined): boolean => output === undefined || (output.crs === undefined && output.properties === undefined && output.skipGeometry !== true)
const conflictsByIds = compileOnce({ ids: [] as string[] }, (p) => selectConflictsOf(queryBuilder, p.ids))
const conflictsOfId = compileOnce({ id: placeholder('id') }, (p) => selectConflictsOfOne(queryBuilder, p.id))
const changePlaceholders: ChangeValues = { id: placeholder('id'), scope: placeholder('scope') as ChangeValues['scope'], organisation: placeholder('organisation'), versions: [], by: placeholder('by') }
const updateOne = compileOnce<UpdateValues, { id: string }>({
  ...changePlaceholders, featureId: placeholder('featureId'), geom: Buffer.alloc(0), startAt: placeholder('startAt'), endAt: placeholder('endAt'),
  attributes: placeholder('attributes'), attributesPatch: placeholder('attributesPatch')
}, (v) => ({ compile: () => updateSourceQuery(v).compile(queryBuilder) }))
const deleteOne = compileOnce<ChangeValues, { version: number }>(changePlaceholders, (v) => ({ compile: () => deleteSourceQuery(v).compile(queryBuilder) }))

/** Listing queries compiled once per shape of their input (compileByShape; LIST_INPUT_SHAPE_KEYS says what a shape is). */
function compiledListing (db: Kysely<Database>): RunListing {
  const compiled = new Map<unknown, (input: ListInput) => CompiledQuery<unknown>>()
  return async <O>(build: (db: Db, input: ListInput) => Compilable<O>, input: ListInput): Promise<O[]> => {
    let bind = compiled.get(build)
    if (bind === undefined) compiled.set(build, bind = compileByShape((i: ListInput) => build(queryBuilder, i), LIST_INPUT_SHAPE_KEYS))
    return (await db.executeQuery(bind(input) as CompiledQuery<O>)).rows
  }
}

const READ_BATCH = 100

export function sourceStore (db: Kysely<Database>, batching?: Batching): SourceStore {
  // One id (a request on its own) by its own statement, several (a batch) by the array's.
  const readByIds = async (ids: string[]): Promise<SourceRow[]> =>
    (await db.executeQuery(ids.length === 1 ? selectById({ id: ids[0] as string }) : selectByIds({ ids }))).rows
  const conflictsOf = async (ids: string[]): Promise<ConflictsById> =>
    conflictsById((await db.executeQuery(ids.length === 1 ? conflictsOfId({ id: ids[0] as string }) : conflictsByIds({ ids }))).rows)
  const insertOne = async (insert: SourceInsert): Promise<ConflictsById> => {
    await insertSources(db, [insert])
    return await conflictsOf(insert.sources.map((s) => s.id))
  }
  let find = async (id: string): Promise<SourceRow | undefined> => (await readByIds([id]))[0]
  let insert = insertOne

  if (batching !== undefined) {
    // Reads: the organisation is checked on each row, so requests of several organisations share a batch.
    const reads = new Batcher<string, SourceRow | undefined>(async (ids) => {
      const rows = new Map((await readByIds(ids)).map((r) => [r.id, r]))
      return ids.map((id) => rows.get(id))
    }, { maxInFlight: batching.readsInFlight, maxWeight: READ_BATCH })
    find = (id) => reads.submit(id)

    // Writes: a batch is all or nothing, while each request must be on its own: when a batch of
    // several fails, each of its requests is inserted again alone, in the order they reached the
    // writer, and gets its own outcome (of two that conflict, the first to arrive wins). The
    // conflicts of every source stored are then read back in one query.
    const writes = new Batcher<SourceInsert, { error: unknown } | { conflicts: ConflictsById }>(async (inserts) => {
      let together = false
      const outcomes: Array<{ error: unknown } | undefined> = []
      if (inserts.length > 1) {
        try {
          await insertSources(db, inserts)
          together = true
        } catch (error) {
          // The database went away: whether the batch committed is unknown (a reply lost after
          // the commit), so none of it is inserted again here, where it could meet its own
          // stored rows. Each request gets the error (503); a client's retry of a write that had
          // committed is answered 409. Any other failure is one request's: one by one says which.
          if (classifyDbError(error)?.kind === 'unavailable') return inserts.map(() => ({ error }))
        }
      }
      if (!together) {
        for (const insert of inserts) {
          try {
            await insertSources(db, [insert])
            outcomes.push(undefined)
          } catch (error) {
            outcomes.push({ error })
          }
        }
      }
      const ids = inserts.flatMap((insert, i) => outcomes[i] === undefined ? insert.sources.map((s) => s.id) : [])
      const conflicts = ids.length === 0 ? new Map() : await conflictsOf(ids)
      return inserts.map((_, i) => outcomes[i] ?? { conflicts })
    }, { maxInFlight: batching.writesInFlight, maxWeight: batching.maxFeatures, weight: (i) => i.sources.length })
    insert = async (one) => {
      const outcome = await writes.submit(one)
      if ('error' in outcome) throw outcome.error
      return outcome.conflicts
    }
  }

  const run = compiledListing(db)
  return {
    find: async (id, scope, output) => visibleIn(isDefault(output) ? await find(id) : (await db.executeQuery(selectByIdOutput(output ?? {})({ id }))).rows[0], scope),
    insert,
    insertIf: (one, keep, keys) => insertSourcesIf(db, one, keep, keys),
    diagnose: (organisation, sources) => diagnoseSources(db, organisation, sources),
    update: async (change, edit, keys) => {
      const query = updateOne(updateValues(change, edit))
      const changed = keys === undefined
        ? (await db.executeQuery(query)).rows[0]
        : await db.transaction().execute(async (trx) => {
          await citeConflictKeys(trx, keys)
          return (await trx.executeQuery(query)).rows[0]
        })
      return changed === undefined ? undefined : (await readByIds([changed.id]))[0]
    },
    delete: async (change) => (await db.executeQuery(deleteOne(changeValues(change)))).rows[0]?.version,
    version: (id, scope) => findVersion(db, id, scope),
    deletion: (id, scope) => findDeletion(db, id, scope),
    versions: (id, scope, page, output) => findVersions(db, id, scope, page, output),
    versionAt: (id, scope, at, output) => findVersionAt(db, id, scope, at, output),
    toLonLat: (xs, ys, srid) => positionsToLonLat(db, xs, ys, srid),
    list: (input) => listSources(run, input),
    listFirst: (input) => listFirstSources(run, input),
    rangeBounds: (input) => rangeBounds(run, input),
    listRange: (input) => listRange(run, input),
    listRangeRows: (input) => listRangeRows(run, input),
    canCopyRanges: (input) => canCopyRanges(db, input),
    listRangeBinary: (input) => listRangeBinary(db, input),
    attributeTypes: (input) => attributeTypes(db, input),
    pageAttributeTypes: (input) => run(pageAttributeTypesQuery, input),
    count: (input) => countSources(run, input),
    extent: (scope) => sourcesExtent(db, scope),
    geometryProblems: (wkts) => geometryProblems(db, wkts)
  }
}
