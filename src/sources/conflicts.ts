// What the POST /sources answers say of conflicts, from what the database recorded
// (sql/008_source_conflict_pairs.sql): the ids per created source (201), each overlap per feature
// (dry runs), and the 409 SOURCE_OVERLAP of on_conflict=reject. A partner that is another
// feature of the same request is named by its id once stored, by its feature_index otherwise.
import { ApiError, type ErrorDetail } from '../errors.js'
import type { ConflictWith } from '../schemas/primitives.js'
import { conflictsOf } from './source-feature.js'
import type { ConflictsById, NewSource } from './sources.repository.js'

/** A stored source's conflicts as the 201 lists them: ids, and the total beyond 100. */
export function conflictIds (conflicts: ConflictsById, id: string): { conflicts: string[], conflicts_total?: number } {
  const { conflicts: list, total } = conflictsOf(conflicts, id)
  return { conflicts: list.map((c) => c.id), ...(total !== undefined ? { conflicts_total: total } : {}) }
}

/** A feature not stored and its conflicts (dry runs, SOURCE_OVERLAP): other features by index. */
export interface FeatureConflicts { feature_id: string, conflict: boolean, conflicts: ConflictWith[], conflicts_total?: number }

export function featureConflicts (conflicts: ConflictsById, sources: NewSource[]): FeatureConflicts[] {
  const indexOf = new Map(sources.map((s, i) => [s.id, i]))
  return sources.map((s) => {
    const { conflicts: list, total } = conflictsOf(conflicts, s.id)
    const entries = list.map(({ id, ...overlap }) => {
      const index = indexOf.get(id)
      return index === undefined ? { id, ...overlap } : { feature_index: index, ...overlap }
    })
    return { feature_id: s.featureId, conflict: entries.length > 0, conflicts: entries, ...(total !== undefined ? { conflicts_total: total } : {}) }
  })
}

const describe = (c: ConflictWith): string =>
  `${c.id ?? `feature ${c.feature_index ?? '?'}`} (${c.overlap_m2.toFixed(1)} m², ${(c.overlap_ratio * 100).toFixed(1)} % of this area, ${c.overlap_start} to ${c.overlap_end})`

/** 409 SOURCE_OVERLAP naming, per conflicting feature, what it overlaps. */
export function overlapRejection (conflicts: ConflictsById, sources: NewSource[]): ApiError {
  const details: ErrorDetail[] = featureConflicts(conflicts, sources).flatMap((f, i) => {
    if (f.conflicts.length === 0) return []
    const count = f.conflicts_total ?? f.conflicts.length
    return [{
      pointer: `/features/${i}/geometry`,
      message: `overlaps ${count} source${count > 1 ? 's' : ''} for an overlapping period: ${f.conflicts.slice(0, 3).map(describe).join('; ')}${count > 3 ? `; and ${count - 3} more` : ''}`,
      feature_index: i,
      feature_id: f.feature_id,
      conflicts: f.conflicts
    }]
  }).slice(0, 100)
  const n = details.length
  return new ApiError('SOURCE_OVERLAP',
    `${n === 1 ? 'A feature claims' : `${n} features claim`} land already claimed for an overlapping period (on_conflict=reject): nothing was stored. ${details[0]?.pointer ?? ''} ${details[0]?.message ?? ''}`.trim(),
    { details })
}

/** One other organisation's source a write made knowingly would start a conflict with, and its key now. */
export interface ConflictKey { source_id: string, key: string }

/**
 * The 409 CONFLICT_KEYS_REQUIRED of a write made knowingly that did not cite every key
 * (sources_conflict_keys in sql/functions/conflict_keys.sql, whose DETAIL lists the keys needed),
 * or undefined for any other error.
 */
export function conflictKeysRefusal (err: unknown): ApiError | undefined {
  const e = err as { constraint?: unknown, detail?: unknown } | null
  if (e?.constraint !== 'sources_conflict_keys' || typeof e.detail !== 'string') return undefined
  const keys = JSON.parse(e.detail) as ConflictKey[]
  return new ApiError('CONFLICT_KEYS_REQUIRED',
    `This write would start conflicts with ${keys.length} source${keys.length === 1 ? '' : 's'} of other organisations: nothing was stored. Send it again with Conflict-Keys: ${keys.map((k) => k.key).join(',')} to make the claim knowingly (the conflicts then start acknowledged by you).`,
    { fields: { conflict_keys: keys } })
}
