// TypeBox schemas of the OGC API – Features documents: links, the landing page, conformance,
// the collection, a page of items, the properties' JSON Schema, and the query parameters of the
// items (so the OpenAPI document names each).
import { FORMAT_NAMES, ITEM_FORMATS } from './formats/format-names.js'
import { Type } from '@sinclair/typebox'
import { DOLLAR_PROPERTIES } from '../http/openapi.js'
import { SourceIdSchema } from '../schemas/primitives.js'
import { SourceReadQuerySchema, VersionsQuerySchema } from '../sources/sources.schema.js'
import { ChosenFeatureSchema } from '../sources/source-feature.schema.js'
import { RETURNABLE, SORTABLE, propertiesWhere } from '../sources/source-properties.js'
import { CRS84, FILTER_LANGS } from './filters/cql2.js'

export const LinkSchema = Type.Object({
  href: Type.String(),
  rel: Type.String(),
  type: Type.Optional(Type.String()),
  title: Type.Optional(Type.String())
}, { additionalProperties: false })

export const LandingSchema = Type.Object({ title: Type.String(), description: Type.String(), links: Type.Array(LinkSchema) }, { description: 'The landing page: links to the API definition, conformance, the collections and the map page.' })
export const ConformanceSchema = Type.Object({ conformsTo: Type.Array(Type.String()) }, { description: 'The conformance classes the service implements.' })

export const CollectionSchema = Type.Object({
  id: Type.String(),
  title: Type.String(),
  description: Type.String(),
  itemType: Type.Literal('feature'),
  crs: Type.Array(Type.String(), { description: 'The CRSs crs= and bbox-crs= take, and a write\'s Content-Crs (OGC API – Features Part 2).' }),
  storageCrs: Type.String({ description: 'The CRS the sources are stored in: CRS84.' }),
  extent: Type.Optional(Type.Object({
    spatial: Type.Object({ bbox: Type.Array(Type.Array(Type.Number())), crs: Type.String() }),
    temporal: Type.Object({ interval: Type.Array(Type.Array(Type.Union([Type.String(), Type.Null()]))), trs: Type.String() })
  }, { description: 'The sources\' extent in your scope (the conflicts collection has none).' })),
  links: Type.Array(LinkSchema)
}, { description: 'A collection: sources (its extent that of the sources in your scope) or conflicts.' })
export const CollectionsSchema = Type.Object({ collections: Type.Array(CollectionSchema), links: Type.Array(LinkSchema) }, { description: 'The collections: sources and conflicts.' })

// Sent pre-serialised (the features spliced as PostgreSQL wrote them, as one buffer or a stream),
// so closed: a field the text carries that is not here is a response outside the document.
export const ItemsSchema = Type.Object({
  type: Type.Literal('FeatureCollection'),
  features: Type.Array(ChosenFeatureSchema, { description: 'Each as GET /sources/?id= sends it, in the crs asked for, with the properties asked for (all by default) and no geometry with skipGeometry=true.' }),
  links: Type.Array(LinkSchema, { description: 'self, and next (with a cursor) when there are more.' }),
  numberReturned: Type.Integer({ minimum: 0 }),
  numberMatched: Type.Optional(Type.Integer({ minimum: 0, description: 'On a first page (no cursor), when at most ITEMS_COUNT_MAX sources match.' })),
  timeStamp: Type.String({ format: 'date-time', description: 'When the page was read.' })
}, { additionalProperties: false })

// $schema and $id are the other (string) members: named as properties, they would be read as
// the schema's own $id by the reference resolver of @fastify/swagger.
export const PropertiesSchemaSchema = Type.Object({
  title: Type.String(),
  type: Type.Literal('object'),
  properties: Type.Record(Type.String(), Type.Object({
    type: Type.Optional(Type.Unknown()),
    format: Type.Optional(Type.String()),
    description: Type.Optional(Type.String())
  }, { additionalProperties: true, description: 'The service\'s properties (type, format, description), then the attributes your organisation declared, each schema as declared.' })),
  required: Type.Optional(Type.Array(Type.String(), { description: 'The attributes your organisation\'s schema requires.' })),
  additionalProperties: Type.Optional(Type.Boolean({ description: 'true: any other attribute is kept.' }))
}, { additionalProperties: Type.String(), description: 'A JSON Schema (2020-12): $schema, $id, title, type, properties, and the declared attributes.' })

const param = (description: string) => Type.Optional(Type.String({ description }))

/** The query parameter of each queryable but the geometry (features.query.ts queryableTerms reads them). */
const QUERYABLE_PARAMETERS = Object.fromEntries(propertiesWhere((p) => p.queryable && p.type !== 'geometry').map(([name, p]) => [name, param(
  p.type === 'timestamp'
    ? `${p.description} Given: an RFC 3339 instant (equal to it) or an interval a/b, ../b, a/.. (within it, ends included).`
    : `${p.description} Given: ${p.type === 'boolean' ? 'true or false' : p.type === 'string' ? 'the value, exactly' : 'a number'}; equal to it.`)]))
export const ItemsQuerySchema = Type.Object({
  limit: param('Features per page, 1 to 10,000 (default 100; larger values are lowered to 10,000, as the next link shows).'),
  bbox: param('minLon,minLat,maxLon,maxLat in CRS84; minLon > maxLon crosses the antimeridian. With bbox-crs, the lower and upper corners in that CRS\'s axis order (EPSG:4326: minLat,minLon,maxLat,maxLon). A source matches when its area intersects the box.'),
  'bbox-crs': param('The CRS of bbox, one of the collection\'s crs (default CRS84).'),
  crs: param('The CRS of the geometries in the answer, one of the collection\'s crs (default CRS84), in its axis order (EPSG:4326 latitude first; EPSG:3035 northing first); the Content-Crs header names it.'),
  datetime: param('An RFC 3339 instant, or an interval a/b, ../b, a/.. (".." or nothing for an open end). A source matches when its period [start_at, end_at) intersects it.'),
  cursor: param('Opaque position of the next page, from a next link.'),
  sortby: param(`A comma list of sortables (/collections/sources/sortables: ${SORTABLE.join(', ')}, and the attributes your organisation declared), each with "-" in front for descending ("+" or nothing: ascending); ties are ordered by id (default: id). A source without a declared attribute sorts after the others ascending, before them descending.`),
  properties: param(`A comma list of the properties to return (/collections/sources/returnables: ${RETURNABLE.join(', ')}, and the attributes your organisation declared); default all, every attribute included; with properties, only the attributes it names.`),
  skipGeometry: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['true', 'false'], description: 'true: each Feature\'s geometry is null (default false).' })),
  // Each queryable but the geometry, as an equality (OGC API – Features Part 3, queryables as query parameters).
  ...QUERYABLE_PARAMETERS,
  organisation: param('Admins only: the sources of one organisation.'),
  filter: param('A CQL2 filter (OGC API – Features Part 3) on the queryables (/collections/sources/queryables), in the encoding filter-lang names. Combined with the other parameters by AND.'),
  'filter-lang': Type.Optional(Type.Unsafe<string>({ type: 'string', enum: FILTER_LANGS, default: 'cql2-text', description: 'The encoding of filter: cql2-text (the default) or cql2-json (URL-encoded JSON).' })),
  'filter-crs': Type.Optional(Type.Unsafe<string>({ type: 'string', format: 'uri-reference', enum: [CRS84], description: 'The CRS of the filter\'s geometries: CRS84 (longitude, latitude), the only one.' })),
  f: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...FORMAT_NAMES], description: `The format (else chosen by Accept, GeoJSON by default): ${ITEM_FORMATS.map((t) => `${t.f.join(' or ')} (${t.type}: ${t.title})`).join('; ')}.` }))
}, { additionalProperties: false })

export const ItemParamsSchema = Type.Object({ id: SourceIdSchema })

const QueryableSchema = Type.Object({
  title: Type.String(),
  description: Type.String(),
  type: Type.Optional(Type.String()),
  format: Type.Optional(Type.String()),
  'x-ogc-role': Type.Optional(Type.String())
})

/**
 * The Queryables document (OGC API – Features Part 3): a JSON Schema (2020-12) of what a filter
 * may name. A property named "$id" in a route's schema would be taken for a schema id when the
 * OpenAPI document is made, so its own "$schema" and "$id" are described under
 * DOLLAR_PROPERTIES, which the document's transform (http/openapi.ts) turns into properties.
 */
export const QueryablesSchema = propertiesDocumentSchema('what a filter may name')
/** The Sortables document: the same form, of what sortby may name. */
// Their $schema and $id are described once, in the queryables' (a property named $id in two
// places of the document is read by OpenAPI validators as one schema $id defined twice).
export const SortablesSchema = propertiesDocumentSchema('what sortby may name', false)
/** The Returnables document: the same form, of what properties may name. */
export const ReturnablesSchema = propertiesDocumentSchema('what properties may name', false)

/** A JSON Schema document of some of the properties (queryables, sortables, returnables): each its own object, as @fastify/swagger wants. */
function propertiesDocumentSchema (what: string, dollars = true) {
  return Type.Unsafe<Record<string, unknown>>({
  description: `A JSON Schema (2020-12) of ${what}${dollars ? '' : ', with its $schema and $id (as the queryables\' document)'}.`,
  type: 'object',
  required: [...(dollars ? ['$schema', '$id'] : []), 'type', 'properties', 'additionalProperties'],
  ...(dollars
    ? {
        [DOLLAR_PROPERTIES]: {
          schema: { type: 'string', format: 'uri', description: 'The JSON Schema dialect: https://json-schema.org/draft/2020-12/schema.' },
          id: { type: 'string', format: 'uri', description: 'This document\'s own URL.' }
        }
      }
    : {}),
  properties: {
    type: { const: 'object' },
    title: { type: 'string' },
    description: { type: 'string' },
    properties: { type: 'object', additionalProperties: QueryableSchema },
    additionalProperties: { const: false }
  }
  })
}

const CRS_PARAMETER = SourceReadQuerySchema.properties.crs
export const ItemReadQuerySchema = Type.Object({
  as_of: SourceReadQuerySchema.properties.as_of,
  crs: CRS_PARAMETER,
  f: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('geojson'), Type.Literal('html')], { description: 'json or geojson (GeoJSON, the default), or html: the page for people.' }))
})
export const ItemVersionsQuerySchema = Type.Object({ limit: VersionsQuerySchema.properties.limit, cursor: VersionsQuerySchema.properties.cursor, crs: CRS_PARAMETER }, { additionalProperties: false })
