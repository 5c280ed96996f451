// The sources store on the fast path: the plain store (sources/sources.store.ts) with concurrent
// reads and writes batched (batcher.ts); GET, listings and a change's UPDATE and conflicts read
// compiled once (compiled-query.ts); deletes and history are the plain store's. Chosen in app.ts
// when DB_FAST_PATH is on; the answers are the same as the plain store's (test/sources runs
// both).
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import { type SourceStore, plainSourceStore } from '../sources/sources.store.js'
import {
  type ConflictsById, type SourceInsert, type SourceRow, type UpdateValues,
  conflictsById, insertSources, selectConflictsOf, selectSourcesByIds, updateSourceQuery, updateValues, visibleIn
} from '../sources/sources.repository.js'
import { listFirstSources, listSources } from '../sources/sources.listing.js'
import { Batcher } from './batcher.js'
import { compileOnce, placeholder, queryBuilder } from './compiled-query.js'
import { compiledListing } from './listing.js'

const selectByIds = compileOnce({ ids: [] as string[] }, (p) => selectSourcesByIds(queryBuilder, p.ids))
const conflictsByIds = compileOnce({ ids: [] as string[] }, (p) => selectConflictsOf(queryBuilder, p.ids))
const updateOne = compileOnce<UpdateValues, SourceRow>({
  id: placeholder('id'), scope: placeholder('scope') as UpdateValues['scope'], organisation: placeholder('organisation'), versions: [], by: placeholder('by'),
  featureId: placeholder('featureId'), geom: Buffer.alloc(0), startAt: placeholder('startAt'), endAt: placeholder('endAt')
}, (v) => ({ compile: () => updateSourceQuery(v).compile(queryBuilder) }))

export interface FastOptions {
  readsInFlight: number
  writesInFlight: number
  /** Features in one INSERT at most (a larger single request still goes alone). */
  maxFeatures: number
}

const READ_BATCH = 100

export function fastSourceStore (db: Kysely<Database>, opts: FastOptions): SourceStore {
  // Reads: the organisation is checked on each row, so requests of several organisations share a batch.
  const reads = new Batcher<string, SourceRow | undefined>(async (ids) => {
    const rows = new Map((await db.executeQuery(selectByIds({ ids }))).rows.map((r) => [r.id, r]))
    return ids.map((id) => rows.get(id))
  }, { maxInFlight: opts.readsInFlight, maxWeight: READ_BATCH })

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
      } catch {
        // One of them (or the database) failed; one by one below says which.
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
    const rows = ids.length === 0 ? [] : (await db.executeQuery(conflictsByIds({ ids }))).rows
    const conflicts: ConflictsById = conflictsById(rows)
    return inserts.map((_, i) => outcomes[i] ?? { conflicts })
  }, { maxInFlight: opts.writesInFlight, maxWeight: opts.maxFeatures, weight: (i) => i.sources.length })

  const run = compiledListing(db)
  return {
    ...plainSourceStore(db),
    find: async (id, scope) => visibleIn(await reads.submit(id), scope),
    list: (input) => listSources(run, input),
    listFirst: (input) => listFirstSources(run, input),
    insert: async (insert) => {
      const outcome = await writes.submit(insert)
      if ('error' in outcome) throw outcome.error
      return outcome.conflicts
    },
    // PUT and PATCH: the plain store's two statements, compiled once (building them with Kysely
    // on every change is a measurable share of it: docs/performance.md).
    update: async (change, edit) => {
      const row = (await db.executeQuery(updateOne(updateValues(change, edit)))).rows[0]
      if (row !== undefined) row.conflicts = conflictsById((await db.executeQuery(conflictsByIds({ ids: [row.id] }))).rows).get(row.id)?.conflicts ?? null
      return row
    }
  }
}
