// What the service says of a stored source beside its Feature text (source-properties.ts
// featureText): its ETag, and the conflicts a write reads back, as POST answers list them.
import type { VersionFeatureSchema } from './source-feature.schema.js'
import { CONFLICTS_LISTED } from './source-properties.js'
import type { Conflict, ConflictList } from './sources.repository.js'
import type { Static } from '@sinclair/typebox'

/** The conflicts as the API lists them: the first CONFLICTS_LISTED, and the total beyond that. */
export function conflictsOf (row: ConflictList): { conflicts: Conflict[], total?: number } {
  if (row.conflicts === null) return { conflicts: [] }
  const list = row.conflicts.list.slice(0, CONFLICTS_LISTED)
  const conflicts = list.map(([id, overlapM2, overlapRatio, start, end]) => ({ id, overlap_m2: overlapM2, overlap_ratio: overlapRatio, overlap_start: start, overlap_end: end }))
  return row.conflicts.total === null ? { conflicts } : { conflicts, total: Number(row.conflicts.total) }
}

/** The weak ETag of a source's version (RFC 9110): it changes exactly when the source does. */
export const etagOf = (version: number): string => `W/"${version}"`

/** A version's Feature as an object, for the versions page (which is serialised whole). */
export const versionFeature = (feature: string): Static<typeof VersionFeatureSchema> => JSON.parse(feature)
