// The one door from the sources and items routes to storage: what they need, and its plain
// implementation, each call one repository function on the app's database. fast/sources-store.ts
// wraps this store with batching and queries compiled once; app.ts picks one (DB_FAST_PATH), and
// the routes cannot tell which.
import type { Kysely } from 'kysely'
import type { Database, Scope } from '../db/database.js'
import {
  type ConflictsById, type NewSource, type SourceChange, type SourceDiagnosis, type SourceEdit, type SourceInsert, type SourceRow, type VersionRow,
  conflictsOfSources, deleteSource, diagnoseSources, findDeletion, findSourceById, findVersion, findVersionAt, findVersions, insertSources, insertSourcesIf, updateSource
} from './sources.repository.js'
import { type ListInput, type ListedPage, type SourcesExtent, listFirstSources, listSources, runPlain, sourcesExtent } from './sources.listing.js'
import { geometryProblems } from './filter.sql.js'

export interface SourceStore {
  find: (id: string, scope: Scope) => Promise<SourceRow | undefined>
  /** Stores the sources and answers their conflicts as recorded by the database. */
  insert: (insert: SourceInsert) => Promise<ConflictsById>
  /**
   * Stores the sources in a transaction that commits only when `keep` says so (dry runs, and
   * on_conflict=reject when there are conflicts, roll back).
   */
  insertIf: (insert: SourceInsert, keep: (conflicts: ConflictsById) => boolean) => Promise<{ conflicts: ConflictsById, kept: boolean }>
  /** Per feature, what the constraints of `sources` say about it (after a write was rejected). */
  diagnose: (organisation: string, sources: NewSource[]) => Promise<SourceDiagnosis[]>
  /**
   * Changes a source at a version If-Match names (one UPDATE); the source as GET returns it,
   * conflicts included, or undefined when nothing changed (then `version` and `deletion` say why).
   */
  update: (change: SourceChange, edit: SourceEdit) => Promise<SourceRow | undefined>
  /** Deletes a source at a version If-Match names (its history stays): the version its deletion is, or undefined. */
  delete: (change: SourceChange) => Promise<number | undefined>
  /** The current version of a source, read on the primary. */
  version: (id: string, scope: Scope) => Promise<number | undefined>
  /** When a deleted source was deleted, and the version its deletion is. */
  deletion: (id: string, scope: Scope) => Promise<{ deleted_at: string, version: number } | undefined>
  /** Its versions, newest first (findVersions). */
  versions: (id: string, scope: Scope, page: { limit: number, before?: number }) => Promise<VersionRow[]>
  /** The version held at an instant (findVersionAt). */
  versionAt: (id: string, scope: Scope, at: string) => Promise<VersionRow | undefined>
  /** A page of a listing (listSources). */
  list: (input: ListInput) => Promise<ListedPage>
  /** A first page and numberMatched (listFirstSources). */
  listFirst: (input: ListInput) => Promise<{ page: ListedPage, matched: number | undefined }>
  /** The bounding box and time span of the sources in a scope. */
  extent: (scope: Scope) => Promise<SourcesExtent>
  /** Why each WKT geometry of a filter is invalid, or null where it is valid (geometryProblems). */
  geometryProblems: (wkts: string[]) => Promise<Array<string | null>>
}

export function plainSourceStore (db: Kysely<Database>): SourceStore {
  return {
    find: (id, scope) => findSourceById(db, id, scope),
    insert: async (insert) => {
      await insertSources(db, [insert])
      return await conflictsOfSources(db, insert.sources.map((s) => s.id))
    },
    insertIf: (insert, keep) => insertSourcesIf(db, insert, keep),
    diagnose: (organisation, sources) => diagnoseSources(db, organisation, sources),
    update: async (change, edit) => {
      const row = await updateSource(db, change, edit)
      if (row !== undefined) row.conflicts = (await conflictsOfSources(db, [row.id])).get(row.id)?.conflicts ?? null
      return row
    },
    version: (id, scope) => findVersion(db, id, scope),
    delete: (change) => deleteSource(db, change),
    deletion: (id, scope) => findDeletion(db, id, scope),
    versions: (id, scope, page) => findVersions(db, id, scope, page),
    versionAt: (id, scope, at) => findVersionAt(db, id, scope, at),
    list: (input) => listSources(runPlain(db), input),
    listFirst: (input) => listFirstSources(runPlain(db), input),
    extent: (scope) => sourcesExtent(db, scope),
    geometryProblems: (wkts) => geometryProblems(db, wkts)
  }
}
