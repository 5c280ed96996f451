// TypeBox schemas of the OGC API – Features documents: links, the landing page, conformance,
// the collection, and the query parameters of the items (so the OpenAPI document names each).
import { Type } from '@sinclair/typebox'
import { SourceFeatureSchema, SourceIdSchema } from '../sources/sources.schema.js'

export const LinkSchema = Type.Object({
  href: Type.String(),
  rel: Type.String(),
  type: Type.Optional(Type.String()),
  title: Type.Optional(Type.String())
})

export const LandingSchema = Type.Object({ title: Type.String(), description: Type.String(), links: Type.Array(LinkSchema) })
export const ConformanceSchema = Type.Object({ conformsTo: Type.Array(Type.String()) })

export const CollectionSchema = Type.Object({
  id: Type.String(),
  title: Type.String(),
  description: Type.String(),
  itemType: Type.Literal('feature'),
  crs: Type.Array(Type.String()),
  extent: Type.Object({
    spatial: Type.Object({ bbox: Type.Array(Type.Array(Type.Number())), crs: Type.String() }),
    temporal: Type.Object({ interval: Type.Array(Type.Array(Type.Union([Type.String(), Type.Null()]))), trs: Type.String() })
  }),
  links: Type.Array(LinkSchema)
})
export const CollectionsSchema = Type.Object({ collections: Type.Array(CollectionSchema), links: Type.Array(LinkSchema) })

const param = (description: string) => Type.Optional(Type.String({ description }))
export const ItemsQuerySchema = Type.Object({
  limit: param('Features per page, 1 to 10,000 (default 100; larger values are lowered to 10,000, as the next link shows).'),
  bbox: param('minLon,minLat,maxLon,maxLat in CRS84; minLon > maxLon crosses the antimeridian. A source matches when its area intersects the box.'),
  datetime: param('An RFC 3339 instant, or an interval a/b, ../b, a/.. (".." or nothing for an open end). A source matches when its period [start_at, end_at) intersects it.'),
  cursor: param('Opaque position of the next page, from a next link.'),
  sortby: param('id, created_at, start_at or end_at, with "-" in front for descending (default id).'),
  feature_id: param('The client\'s own feature id, exactly.'),
  organisation: param('Admins only: the sources of one organisation.'),
  conflict: param('true: only sources in conflict with another (of any organisation); false: only sources without one.'),
  f: param('Response format: json or geojson (both GeoJSON); html redirects to the map page.')
}, { additionalProperties: false })

export const ItemParamsSchema = Type.Object({ id: SourceIdSchema })

/** The JSON Schema of a feature's properties (describedBy), so clients get typed fields. */
export const SOURCE_PROPERTIES_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'sources',
  title: 'sources',
  type: 'object',
  properties: Object.fromEntries(Object.entries(SourceFeatureSchema.properties.properties.properties).map(([name, schema]) => {
    const s = schema as { type?: string, description?: string, pattern?: string }
    return [name, { type: s.type, ...(s.pattern?.includes('T') === true ? { format: 'date-time' } : {}), ...(s.description ? { description: s.description } : {}) }]
  }))
}
