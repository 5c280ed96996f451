// What the sources routes need from storage, and its plain implementation: each call one
// repository function on the app's database. fast/sources-store.ts is the same interface with
// batching and queries compiled once; app.ts picks one (DB_FAST_PATH).
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import {
  type ConflictsById, type ListInput, type ListedPage, type Scope, type SourceInsert, type SourceRow,
  conflictsOfSources, deleteSource, findSourceById, insertSources, listFirstSources, listSources, runPlain
} from './sources.repository.js'

export interface SourceStore {
  find: (id: string, scope: Scope) => Promise<SourceRow | undefined>
  /** Stores the sources and answers their conflicts as recorded by the database. */
  insert: (insert: SourceInsert) => Promise<ConflictsById>
  delete: (id: string, scope: Scope) => Promise<boolean>
  /** A page of a listing (listSources). */
  list: (input: ListInput) => Promise<ListedPage>
  /** A first page and numberMatched (listFirstSources). */
  listFirst: (input: ListInput) => Promise<{ page: ListedPage, matched: number | undefined }>
}

export function plainSourceStore (db: Kysely<Database>): SourceStore {
  return {
    find: (id, scope) => findSourceById(db, id, scope),
    insert: async (insert) => {
      await insertSources(db, [insert])
      return await conflictsOfSources(db, insert.sources.map((s) => s.id))
    },
    delete: (id, scope) => deleteSource(db, id, scope),
    list: (input) => listSources(runPlain(db), input),
    listFirst: (input) => listFirstSources(runPlain(db), input)
  }
}
