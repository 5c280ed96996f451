// Schema primitives that several modules share (ids, date-times, bbox, what an overlap is, a
// header as the OpenAPI document describes it), defined once. Their module sits at the bottom of
// the layers (.dependency-cruiser.cjs), below errors.ts, whose error bodies use them too (a
// SOURCE_OVERLAP's details name the conflicts): in http/, they would be above it.
import { type Static, Type } from '@sinclair/typebox'

export const SOURCE_ID_PATTERN = '^src_[0-9A-Za-z]{13,64}$'
export const SourceIdSchema = Type.String({ pattern: SOURCE_ID_PATTERN, description: 'Service-assigned identifier: "src_" + base62.' })
export const FeatureIdSchema = Type.String({ minLength: 1, maxLength: 256, description: 'The client\'s own identifier for the source.' })
export const DateTimeInputSchema = Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 date-time with Z or an offset, or a date alone (midnight UTC).' })
export const UtcDateTimeSchema = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$', description: 'ISO 8601 in UTC, e.g. 2024-05-01T12:00:00Z.' })
export const BboxSchema = Type.Array(Type.Number(), { minItems: 4 })

export const OverlapFields = {
  overlap_m2: Type.Number({ description: 'Area in m² of the intersection of the two areas.' }),
  overlap_ratio: Type.Number({ minimum: 0, maximum: 1, description: 'overlap_m2 over the area of this source.' }),
  overlap_start: UtcDateTimeSchema,
  overlap_end: UtcDateTimeSchema
}
/** A conflict of a feature not stored (dry runs, SOURCE_OVERLAP): with a source, or with another feature of the request. */
export const ConflictWithSchema = Type.Object({
  id: Type.Optional(SourceIdSchema),
  feature_index: Type.Optional(Type.Integer({ description: 'Or the other feature of the same request it conflicts with.' })),
  ...OverlapFields
})
export type ConflictWith = Static<typeof ConflictWithSchema>

/** A response header in the OpenAPI document: its value's schema and what it says. */
export interface HeaderDoc { type: 'string', description: string }
export const headerDoc = (description: string): HeaderDoc => ({ type: 'string', description })
