// The sources store on the fast path: the plain store (sources/sources.store.ts) with concurrent
// reads and writes batched (batcher.ts), and GET and listings compiled once
// (compiled-query.ts); changes, deletes and history are the plain store's. Chosen in app.ts when DB_FAST_PATH is on; the answers are the same as the
// plain store's (test/sources runs both). What it does not override is the plain store's.
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import { type SourceStore, plainSourceStore } from '../sources/sources.store.js'
import {
  type ConflictsById, type SourceInsert, type SourceRow,
  conflictsById, insertSources, selectConflictsOf, selectSourcesByIds, visibleIn
} from '../sources/sources.repository.js'
import { listFirstSources, listSources } from '../sources/sources.listing.js'
import { Batcher } from './batcher.js'
import { compileOnce, queryBuilder } from './compiled-query.js'
import { compiledListing } from './listing.js'

const selectByIds = compileOnce({ ids: [] as string[] }, (p) => selectSourcesByIds(queryBuilder, p.ids))
const conflictsByIds = compileOnce({ ids: [] as string[] }, (p) => selectConflictsOf(queryBuilder, p.ids))

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
    }
  }
}
