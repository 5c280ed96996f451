// The one door from the watches routes to storage.
import type { Kysely } from 'kysely'
import type { Database, Scope } from '../db/database.js'
import type { Area } from '../db/ewkb.js'
import { geometryProblems } from '../sources/filter.sql.js'
import { type AreaCheck, type NewWatch, type WatchRow, checkWatchArea, deleteWatch, findWatch, insertWatch, listWatches } from './watches.repository.js'

export interface WatchStore {
  checkArea: (area: Area) => Promise<AreaCheck>
  /** Why each WKT literal of a filter is invalid, or null where it is valid. */
  geometryProblems: (wkts: string[]) => Promise<Array<string | null>>
  create: (watch: NewWatch) => Promise<WatchRow>
  list: (scope: Scope, limit: number, after: string | undefined) => Promise<WatchRow[]>
  find: (id: string, scope: Scope) => Promise<WatchRow | undefined>
  delete: (id: string, scope: Scope) => Promise<boolean>
}

export function watchStore (db: Kysely<Database>): WatchStore {
  return {
    checkArea: (area) => checkWatchArea(db, area),
    geometryProblems: (wkts) => geometryProblems(db, wkts),
    create: (watch) => insertWatch(db, watch),
    list: (scope, limit, after) => listWatches(db, scope, limit, after),
    find: (id, scope) => findWatch(db, id, scope),
    delete: (id, scope) => deleteWatch(db, id, scope)
  }
}
