// TypeBox schemas for the sources endpoints: the FeatureCollection accepted by POST /sources and
// the bodies each route returns. The primitives they share with other modules (ids, date-times,
// bbox, overlaps) are schemas/primitives.ts's.
import { type Static, Type } from '@sinclair/typebox'
import { BboxSchema, ConflictWithSchema, DateTimeInputSchema, FeatureIdSchema, OverlapFields, SourceIdSchema, UtcDateTimeSchema } from '../schemas/primitives.js'

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

export type FeatureInput = Static<typeof FeatureInputSchema>

export function featureCollectionSchema (maxFeatures: number) {
  return Type.Object({
    type: Type.Literal('FeatureCollection'),
    features: Type.Array(FeatureInputSchema, { minItems: 1, maxItems: maxFeatures }),
    bbox: Type.Optional(BboxSchema)
  })
}
export type FeatureCollection = Static<ReturnType<typeof featureCollectionSchema>>

export const CreatedSourceSchema = Type.Object({
  id: SourceIdSchema,
  feature_id: FeatureIdSchema,
  conflicts: Type.Array(SourceIdSchema, { maxItems: 100, description: 'The sources it conflicts with (of any organisation, including other features of this request), largest overlap first; the first 100 when there are more (then conflicts_total). GET /sources/?id= gives each overlap.' }),
  conflicts_total: Type.Optional(Type.Integer({ minimum: 101 }))
})
export const CreateResponseSchema = Type.Object({
  id: Type.Optional(SourceIdSchema),
  message: Type.String(),
  sources: Type.Array(CreatedSourceSchema, { description: 'In request order.' })
}, { description: 'Created: the sources\' ids (and `id` when there is one), each with the sources it conflicts with.' })
export type CreateResponse = Static<typeof CreateResponseSchema>

export const CreateQuerySchema = Type.Object({
  on_conflict: Type.Optional(Type.Union([Type.Literal('record'), Type.Literal('reject')], { description: 'record: store and report conflicts (201). reject: store nothing when any feature would conflict (409 SOURCE_OVERLAP). Default: the deployment\'s CONFLICT_POLICY.' })),
  dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: validate and detect conflicts exactly as a real POST, answer 200 with what would be created, store nothing.' }))
}, { additionalProperties: false })
export type CreateQuery = Static<typeof CreateQuerySchema>

export const DryRunResponseSchema = Type.Object({
  message: Type.String(),
  dry_run: Type.Literal(true),
  sources: Type.Array(Type.Object({
    feature_id: FeatureIdSchema,
    conflict: Type.Boolean(),
    conflicts: Type.Array(ConflictWithSchema, { maxItems: 100, description: 'Largest overlap first; the first 100 when there are more (then conflicts_total).' }),
    conflicts_total: Type.Optional(Type.Integer({ minimum: 101 }))
  }), { description: 'What would be created, in request order (nothing was stored, so there are no ids).' })
}, { description: 'A dry run (dry_run=true): what would be created and its conflicts; nothing was stored.' })
export type DryRunResponse = Static<typeof DryRunResponseSchema>

export const SourceQuerySchema = Type.Object({ id: SourceIdSchema })

export const ConflictSchema = Type.Object({
  id: SourceIdSchema,
  ...OverlapFields
}, { additionalProperties: false, description: 'A conflicting source: only its id and the overlap are shown, whatever its organisation.' })

// Sent pre-serialised (source-feature.ts, and PostgreSQL's featureText for listings), so closed:
// a field the text carries that is not here is a response outside the document.
export const SourceFeatureSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: SourceIdSchema,
  geometry: Type.Object({
    type: Type.Literal('Polygon'),
    coordinates: Type.Array(Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 3 }), { minItems: 4 }), { minItems: 1 })
  }, { additionalProperties: false }),
  properties: Type.Object({
    feature_id: FeatureIdSchema,
    start_at: UtcDateTimeSchema,
    end_at: UtcDateTimeSchema,
    created_at: UtcDateTimeSchema,
    updated_at: Type.String({ ...UtcDateTimeSchema, description: 'When this version was written (created_at for version 1).' }),
    version: Type.Integer({ minimum: 1, description: 'Version number: 1 when created, one more at every change. The ETag names it.' }),
    organisation: Type.String(),
    area_m2: Type.Number({ description: 'Area in square metres on the WGS 84 ellipsoid, edges straight in longitude/latitude as RFC 7946 defines them.' }),
    conflict: Type.Boolean({ description: 'Whether another source (of any organisation) claims the same land for an overlapping period: periods overlap and the areas still intersect after each is shrunk inward by the conflict tolerance (9 m by default).' }),
    conflicts: Type.Array(ConflictSchema, { maxItems: 100, description: 'The conflicting sources, largest overlap first; the first 100 when there are more (then conflicts_total).' }),
    conflicts_total: Type.Optional(Type.Integer({ minimum: 101, description: 'Present when there are more than 100 conflicts: how many.' }))
  }, { additionalProperties: false })
}, { additionalProperties: false, description: 'A registered source as a GeoJSON Feature (RFC 7946).' })

export const DeleteResponseSchema = Type.Object({ message: Type.String() }, { description: 'Deleted.' })

/** A PATCH body: any JSON object, checked by source-changes.ts `patchEdit` (which members, and the result). */
export const MergePatchSchema = Type.Object({}, { additionalProperties: true, description: 'RFC 7396 merge patch of the Feature: geometry, properties.start_at, properties.end_at.' })

export const SourceReadQuerySchema = Type.Object({
  id: SourceIdSchema,
  as_of: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'RFC 3339 instant: the source as held then (404 if it did not exist yet, 410 if it was deleted by then).' }))
})

/** A source as one of its versions held it: no conflicts (they are not versioned). */
export const VersionFeatureSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: SourceIdSchema,
  geometry: SourceFeatureSchema.properties.geometry,
  properties: Type.Object({
    feature_id: FeatureIdSchema,
    start_at: UtcDateTimeSchema,
    end_at: UtcDateTimeSchema,
    created_at: UtcDateTimeSchema,
    updated_at: Type.String({ ...UtcDateTimeSchema, description: 'When this version was written.' }),
    version: Type.Integer({ minimum: 1 }),
    organisation: Type.String(),
    area_m2: Type.Number()
  })
}, { description: 'The source as this version held it (conflicts are not versioned).' })

export const SourceOrVersionSchema = Type.Union([SourceFeatureSchema, VersionFeatureSchema], { description: 'The source; with as_of, the version held then.' })

export const VersionsQuerySchema = Type.Object({
  id: SourceIdSchema,
  limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: 'Versions per page, 1 to 1,000 (default 100).' })),
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'From the next link: the versions before this one.' }))
}, { additionalProperties: false })

export const VersionsResponseSchema = Type.Object({
  id: SourceIdSchema,
  versions: Type.Array(Type.Object({
    version: Type.Integer({ minimum: 1 }),
    operation: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')]),
    recorded_at: Type.String({ ...UtcDateTimeSchema, description: 'Transaction time of the write.' }),
    recorded_by: Type.String({ description: 'The account\'s e-mail, or the database role for a write made with SQL.' }),
    feature: VersionFeatureSchema
  }), { description: 'Newest first.' }),
  links: Type.Array(Type.Object({ href: Type.String(), rel: Type.String(), type: Type.String() })),
  numberReturned: Type.Integer({ minimum: 0 })
})
export type VersionsResponse = Static<typeof VersionsResponseSchema>

export const NotModifiedSchema = Type.Null({ description: 'Not modified: the ETag in If-None-Match is current.' })
