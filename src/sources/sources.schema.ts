// TypeBox schemas for the sources endpoints: the FeatureCollection accepted by POST /sources and
// the bodies each route returns. The primitives they share with other modules (ids, date-times,
// bbox, overlaps) are schemas/primitives.ts's.
import { type Static, Type } from '@sinclair/typebox'
import { BboxSchema, ConflictWithSchema, DateTimeInputSchema, FeatureIdSchema, SourceIdSchema } from '../schemas/primitives.js'

// [longitude, latitude] or [longitude, latitude, altitude]; ranges and closure are checked in geojson.ts.
export const PositionSchema = Type.Array(Type.Number(), { minItems: 2, maxItems: 3 })
export const LinearRingSchema = Type.Array(PositionSchema, { minItems: 4 })
const PolygonRingsSchema = Type.Array(LinearRingSchema, { minItems: 1, description: 'Exterior ring, then holes.' })
export const PolygonSchema = Type.Object({
  type: Type.Literal('Polygon'),
  coordinates: PolygonRingsSchema,
  bbox: Type.Optional(BboxSchema)
})
export const MultiPolygonSchema = Type.Object({
  type: Type.Literal('MultiPolygon'),
  coordinates: Type.Array(PolygonRingsSchema, { minItems: 1, description: 'Its parts, each an exterior ring, then holes.' }),
  bbox: Type.Optional(BboxSchema)
})
export type AreaInput = Static<typeof PolygonSchema> | Static<typeof MultiPolygonSchema>

/**
 * A Polygon or a MultiPolygon, told apart by `type`: a oneOf with a discriminator (OpenAPI's, and
 * Ajv's `discriminator` option), so that a bad Polygon is told what a Polygon needs, not what
 * both types would.
 */
export const AreaSchema = Type.Unsafe<AreaInput>({
  type: 'object',
  required: ['type'],
  oneOf: [PolygonSchema, MultiPolygonSchema],
  discriminator: { propertyName: 'type' },
  description: 'The area: a Polygon or a MultiPolygon (parts), stored and returned as sent.'
})

/** A Feature's id as GIS files carry it; which strings and numbers are ids is geojson.ts's `clientId`. */
export const FeatureIdInputSchema = Type.Union([
  Type.String({ description: '1 to 256 characters.' }),
  Type.Number({ description: 'An integer within ±(2^53 − 1), kept as its decimal string (42 and "42" are the same id).' })
], { description: 'The client\'s own identifier for the source: a string, or an integer (returned as its decimal string). Optional when the query names id_property.' })

/** GeoJSON 2008's `crs` member: geojson.ts accepts CRS84 / EPSG:4326 (named in any usual spelling) and refuses any other. */
export const CrsInputSchema = Type.Unknown({ description: 'Optional (GeoJSON 2008): a named CRS, accepted when it is CRS84 or EPSG:4326 (urn:ogc:def:crs:OGC:1.3:CRS84, urn:ogc:def:crs:EPSG::4326, http://www.opengis.net/def/crs/OGC/1.3/CRS84, EPSG:4326, …); coordinates are longitude, latitude whichever is named. Any other CRS is a 400.' })

export const FeatureInputSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: Type.Optional(FeatureIdInputSchema),
  properties: Type.Object({ start_at: DateTimeInputSchema, end_at: DateTimeInputSchema }, {
    additionalProperties: true,
    description: 'start_at and end_at, and the source\'s attributes: any other members, kept and returned as sent (at most 16 KiB; names 1 to 256 characters). The properties the service adds on output (feature_id, version, area_m2, conflicts, …) are read-only: sent back, they are ignored.'
  }),
  geometry: AreaSchema,
  bbox: Type.Optional(BboxSchema),
  crs: Type.Optional(CrsInputSchema)
})

export type FeatureInput = Static<typeof FeatureInputSchema>

export function featureCollectionSchema (maxFeatures: number) {
  return Type.Object({
    type: Type.Literal('FeatureCollection'),
    features: Type.Array(FeatureInputSchema, { minItems: 1, maxItems: maxFeatures }),
    bbox: Type.Optional(BboxSchema),
    crs: Type.Optional(CrsInputSchema)
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

/** ?id_property=: which member of each Feature's properties holds the client's id. */
export const IdPropertySchema = Type.String({ minLength: 1, maxLength: 256, description: 'The name of the property of each Feature that holds the client\'s id (a string or an integer), for files whose features carry none (e.g. parcel_no); it wins over the Feature\'s `id`.' })

export const CreateQuerySchema = Type.Object({
  on_conflict: Type.Optional(Type.Union([Type.Literal('record'), Type.Literal('reject'), Type.Literal('acknowledge')], { description: 'record: store and report conflicts (201). reject: store nothing when any feature would conflict (409 SOURCE_OVERLAP). acknowledge: a claim made knowingly: a write that would start conflicts with other organisations\' sources is 409 CONFLICT_KEYS_REQUIRED listing their conflict keys, until it is sent again citing them in Conflict-Keys; then it is stored and its new conflicts start acknowledged by you. Default: the deployment\'s CONFLICT_POLICY.' })),
  dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: validate and detect conflicts exactly as a real POST, answer 200 with what would be created, store nothing.' })),
  id_property: Type.Optional(IdPropertySchema)
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

export const SourceQuerySchema = Type.Object({ id: SourceIdSchema, id_property: Type.Optional(IdPropertySchema) })

/** on_conflict of PUT and PATCH: reject is POST's alone (a change is refused by If-Match, not by its conflicts). */
export const ChangeConflictSchema = Type.Union([Type.Literal('record'), Type.Literal('acknowledge')], {
  description: 'acknowledge: a change made knowingly: one that would start conflicts with other organisations\' sources is 409 CONFLICT_KEYS_REQUIRED listing their conflict keys, until it is sent again citing them in Conflict-Keys; then its new conflicts start acknowledged by you. record: store and report. Default: acknowledge when CONFLICT_POLICY is acknowledge, else record.'
})
export type ChangeConflict = Static<typeof ChangeConflictSchema>

/** PUT's and PATCH's query on /sources. */
export const SourceChangeQuerySchema = Type.Object({ id: SourceIdSchema, id_property: Type.Optional(IdPropertySchema), on_conflict: Type.Optional(ChangeConflictSchema) })

/** The header of a write made knowingly. */
export const ConflictKeysHeadersSchema = Type.Object({
  'conflict-keys': Type.Optional(Type.String({
    maxLength: 8192,
    description: 'With on_conflict=acknowledge: the conflict keys (comma-separated) a 409 CONFLICT_KEYS_REQUIRED listed, one per other organisation\'s source the write starts a conflict with. A key names one version of that source: after it changes, the key is stale and the answer is 409 again, with the new one.'
  }))
})

export const DeleteResponseSchema = Type.Object({ message: Type.String() }, { description: 'Deleted.' })

/** A PATCH body: any JSON object, checked by source-changes.ts `patchEdit` (which members, and the result). */
export const MergePatchSchema = Type.Object({}, { additionalProperties: true, description: 'RFC 7396 merge patch of the Feature: geometry, and properties: start_at, end_at and the attributes (merged recursively; a null member removes one).' })

/** `crs` of a read (OGC API – Features Part 2): the CRS of the geometry in the answer. */
export const CrsParameterSchema = Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The CRS of the geometry in the answer, one of the collection\'s crs (default CRS84), in its axis order; the Content-Crs header names it.' }))

export const SourceReadQuerySchema = Type.Object({
  id: SourceIdSchema,
  as_of: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'RFC 3339 instant: the source as held then (404 if it did not exist yet, 410 if it was deleted by then).' })),
  crs: CrsParameterSchema
})

export const VersionsQuerySchema = Type.Object({
  id: SourceIdSchema,
  limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: 'Versions per page, 1 to 1,000 (default 100).' })),
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'From the next link: the versions before this one.' })),
  crs: CrsParameterSchema
}, { additionalProperties: false })
