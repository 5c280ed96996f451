// The sources store with the conflict pairs its writes record counted (ops/metrics.ts): wraps
// whichever store app.ts built and answers exactly what it answers.
import { conflictsOf } from '../sources/source-feature.js'
import type { ConflictsById, SourceInsert } from '../sources/sources.repository.js'
import type { SourceStore } from '../sources/sources.store.js'
import type { Metrics } from './metrics.js'

/** Pairs among the new sources' conflicts: a pair of two new sources is listed by both. */
export function newPairs (insert: SourceInsert, conflicts: ConflictsById): number {
  const created = new Set(insert.sources.map((s) => s.id))
  let pairs = 0
  for (const id of created) {
    const { conflicts: list, total } = conflictsOf(conflicts, id)
    if (list.length === 0) continue
    const within = list.filter((c) => created.has(c.id)).length
    pairs += (total ?? list.length) - within + within / 2
  }
  return pairs
}

export function countedSourceStore (store: SourceStore, metrics: Metrics): SourceStore {
  return {
    ...store,
    insert: async (insert) => {
      const conflicts = await store.insert(insert)
      if (conflicts.size > 0) metrics.conflictPairs.inc(newPairs(insert, conflicts))
      return conflicts
    },
    insertIf: async (insert, keep, keys) => {
      const outcome = await store.insertIf(insert, keep, keys)
      if (outcome.kept && outcome.conflicts.size > 0) metrics.conflictPairs.inc(newPairs(insert, outcome.conflicts))
      return outcome
    }
  }
}
