// The one door from the conflicts routes to storage.
import type { Kysely } from 'kysely'
import type { Database, Scope } from '../db/database.js'
import {
  type ConflictListInput, type ConflictParties, type ConflictText, type NoteRow, type StanceChange, type StanceRow,
  type CarvePreview, carvePreview, carveSource, findConflict, findParties, insertNote, listConflicts, listNotes, listStances, updateStance
} from './conflicts.repository.js'
import { geometryProblems } from '../sources/filter.sql.js'

export interface ConflictStore {
  list: (input: ConflictListInput) => Promise<ConflictText[]>
  find: (id: string, scope: Scope, organisation: string) => Promise<ConflictText | undefined>
  parties: (id: string, scope: Scope) => Promise<ConflictParties | undefined>
  /** The conflict as changed, or undefined when the version or the state no longer matched. */
  setStance: (change: StanceChange) => Promise<ConflictText | undefined>
  notes: (conflictId: string) => Promise<NoteRow[]>
  addNote: (conflictId: string, organisation: string, by: string, body: string) => Promise<NoteRow>
  stances: (conflictId: string) => Promise<StanceRow[]>
  carvePreview: (id: string, scope: Scope, ids: string[] | null) => Promise<CarvePreview | undefined>
  /** The id carved, or undefined when the version moved on or nothing would remain. */
  carve: (id: string, scope: Scope, ids: string[] | null, versions: number[] | null, by: string) => Promise<string | undefined>
  /** Why each WKT literal of a filter is invalid, or null where it is valid. */
  geometryProblems: (wkts: string[]) => Promise<Array<string | null>>
}

export function conflictStore (db: Kysely<Database>): ConflictStore {
  return {
    list: (input) => listConflicts(db, input),
    find: (id, scope, organisation) => findConflict(db, id, scope, organisation),
    parties: (id, scope) => findParties(db, id, scope),
    setStance: (change) => updateStance(db, change),
    notes: (conflictId) => listNotes(db, conflictId),
    addNote: (conflictId, organisation, by, body) => insertNote(db, conflictId, organisation, by, body),
    stances: (conflictId) => listStances(db, conflictId),
    carvePreview: (id, scope, ids) => carvePreview(db, id, scope, ids),
    carve: (id, scope, ids, versions, by) => carveSource(db, id, scope, ids, versions, by),
    geometryProblems: (wkts) => geometryProblems(db, wkts)
  }
}
