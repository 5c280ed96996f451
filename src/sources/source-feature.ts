// What the service says of a stored source beside its Feature text (source-properties.ts
// featureText): its ETag, the conflicts a write reads back, a version's Feature as an object.
import type { VersionFeatureSchema } from './source-feature.schema.js'
import type { ConflictList, ConflictsById } from './sources.repository.js'
import type { Static } from '@sinclair/typebox'

const NONE: ConflictList = { conflicts: [] }

/** The conflicts a write read back of one source (none when it is not in the map). */
export const conflictsOf = (conflicts: ConflictsById, id: string): ConflictList => conflicts.get(id) ?? NONE

/** The weak ETag of a source's version (RFC 9110): it changes exactly when the source does. */
export const etagOf = (version: number): string => `W/"${version}"`

/** A version's Feature as an object, for the versions page (which is serialised whole). */
export const versionFeature = (feature: string): Static<typeof VersionFeatureSchema> => JSON.parse(feature)
