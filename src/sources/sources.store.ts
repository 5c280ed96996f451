// The one door from the sources and items routes to storage: what they need, and its plain
// implementation, each call one repository function on the app's database. fast/sources-store.ts
// wraps this store with batching and queries compiled once; app.ts picks one (DB_FAST_PATH), and
// the routes cannot tell which.
import type { Kysely } from 'kysely'
import type { Database, Scope } from '../db/database.js'
import {
  type ConflictsById, type NewSource, type SourceDiagnosis, type SourceInsert, type SourceRow,
  conflictsOfSources, deleteSource, diagnoseSources, findSourceById, insertSources, insertSourcesIf
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
  delete: (id: string, scope: Scope) => Promise<boolean>
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
    delete: (id, scope) => deleteSource(db, id, scope),
    list: (input) => listSources(runPlain(db), input),
    listFirst: (input) => listFirstSources(runPlain(db), input),
    extent: (scope) => sourcesExtent(db, scope),
    geometryProblems: (wkts) => geometryProblems(db, wkts)
  }
}
