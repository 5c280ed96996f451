// The response schemas of a source as a GeoJSON Feature (current, or as a version held it) and of
// its versions page, derived from the property registry (source-properties.ts): a property added
// there is described here without a change.
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { type SourceProperty, propertiesWhere } from './source-properties.js'
import { SourceIdSchema, UtcDateTimeSchema } from '../schemas/primitives.js'

/** A property's value schema in responses. */
function schemaOf (p: SourceProperty): TSchema {
  if (p.schema !== undefined) return { ...p.schema, description: p.description }
  switch (p.type) {
    case 'timestamp': return { ...UtcDateTimeSchema, description: p.description }
    case 'integer': return Type.Integer({ description: p.description })
    case 'number': return Type.Number({ description: p.description })
    case 'boolean': return Type.Boolean({ description: p.description })
    default: return Type.String({ description: p.description })
  }
}

function propertiesSchema (isVersion: boolean) {
  const shown = propertiesWhere((p) => p.returned !== false && (!isVersion || p.versioned))
  // Beside the service's members, the client's attributes (attributes.ts), any JSON value each.
  return Type.Object(Object.fromEntries(shown.map(([name, p]) => [name, p.returned === 'optional' ? Type.Optional(schemaOf(p)) : schemaOf(p)])), {
    additionalProperties: true, description: 'The service\'s properties, then the client\'s attributes: every other member of the properties it sent, as sent.'
  })
}

const RingsOutSchema = Type.Array(Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 3 }), { minItems: 4 }), { minItems: 1 })

/** The area as the client sent it: a client that posts Polygons only ever reads Polygons. */
const AreaOutSchema = Type.Union([
  Type.Object({ type: Type.Literal('Polygon'), coordinates: RingsOutSchema }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('MultiPolygon'), coordinates: Type.Array(RingsOutSchema, { minItems: 1 }) }, { additionalProperties: false })
], { description: 'The area, a Polygon or a MultiPolygon, of the type it was sent as.' })

/**
 * A source as a GeoJSON Feature, current or as a version held it (a version has no conflicts:
 * they are not versioned). Sent pre-serialised (featureText), so closed: a field the text carries
 * that is not here is a response outside the document.
 */
function featureSchema (isVersion: boolean, description: string) {
  return Type.Object({
    type: Type.Literal('Feature'),
    id: SourceIdSchema,
    geometry: AreaOutSchema,
    properties: propertiesSchema(isVersion)
  }, { additionalProperties: false, description })
}

export const SourceFeatureSchema = featureSchema(false, 'A registered source as a GeoJSON Feature (RFC 7946).')

/** A source in a page of items: the properties chosen (properties=; all by default), the geometry null with skipGeometry=true. */
export const ChosenFeatureSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: SourceIdSchema,
  geometry: Type.Union([AreaOutSchema, Type.Null()]),
  properties: Type.Partial(propertiesSchema(false))
}, { additionalProperties: false, description: 'A registered source as a GeoJSON Feature (RFC 7946), its properties those chosen.' })
export const VersionFeatureSchema = featureSchema(true, 'The source as this version held it (conflicts are not versioned).')

export const SourceOrVersionSchema = Type.Union([SourceFeatureSchema, VersionFeatureSchema], { description: 'The source; with as_of, the version held then.' })

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
