// TypeBox schemas for the sources endpoints: the FeatureCollection accepted by POST /sources and
// the bodies each route returns. Shared primitives (ids, date-times) live here once.
import { type Static, Type } from '@sinclair/typebox'

export const SOURCE_ID_PATTERN = '^src_[0-9A-Za-z]{13,64}$'
export const SourceIdSchema = Type.String({ pattern: SOURCE_ID_PATTERN, description: 'Service-assigned identifier: "src_" + base62.' })
export const FeatureIdSchema = Type.String({ minLength: 1, maxLength: 256, description: 'The client\'s own identifier for the source.' })
export const DateTimeInputSchema = Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 date-time with Z or an offset, or a date alone (midnight UTC).' })
export const UtcDateTimeSchema = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$', description: 'ISO 8601 in UTC, e.g. 2024-05-01T12:00:00Z.' })
const BboxSchema = Type.Array(Type.Number(), { minItems: 4 })

// [longitude, latitude] or [longitude, latitude, altitude]; ranges and closure are checked in geojson.ts.
export const PositionSchema = Type.Array(Type.Number(), { minItems: 2, maxItems: 3 })
export const LinearRingSchema = Type.Array(PositionSchema, { minItems: 4 })
export const PolygonSchema = Type.Object({
  type: Type.Literal('Polygon'),
  coordinates: Type.Array(LinearRingSchema, { minItems: 1, description: 'Exterior ring, then holes.' }),
  bbox: Type.Optional(BboxSchema)
})

export const FeatureInputSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: FeatureIdSchema,
  properties: Type.Object({ start_at: DateTimeInputSchema, end_at: DateTimeInputSchema }),
  geometry: PolygonSchema,
  bbox: Type.Optional(BboxSchema)
})

export function featureCollectionSchema (maxFeatures: number) {
  return Type.Object({
    type: Type.Literal('FeatureCollection'),
    features: Type.Array(FeatureInputSchema, { minItems: 1, maxItems: maxFeatures }),
    bbox: Type.Optional(BboxSchema)
  })
}
export type FeatureCollection = Static<ReturnType<typeof featureCollectionSchema>>

export const CreatedSourceSchema = Type.Object({ id: SourceIdSchema, feature_id: FeatureIdSchema })
export const CreateResponseSchema = Type.Object({
  id: Type.Optional(SourceIdSchema),
  message: Type.String(),
  sources: Type.Array(CreatedSourceSchema, { description: 'In request order.' })
})
export type CreateResponse = Static<typeof CreateResponseSchema>

export const SourceQuerySchema = Type.Object({ id: SourceIdSchema })

export const SourceFeatureSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: SourceIdSchema,
  geometry: Type.Object({
    type: Type.Literal('Polygon'),
    coordinates: Type.Array(Type.Array(Type.Array(Type.Number())))
  }),
  properties: Type.Object({
    feature_id: FeatureIdSchema,
    start_at: UtcDateTimeSchema,
    end_at: UtcDateTimeSchema,
    created_at: UtcDateTimeSchema,
    organisation: Type.String(),
    area_m2: Type.Number({ description: 'Area in square metres on the WGS 84 ellipsoid, edges straight in longitude/latitude as RFC 7946 defines them.' })
  })
})
export type SourceFeature = Static<typeof SourceFeatureSchema>

export const DeleteResponseSchema = Type.Object({ message: Type.String() })
