// OGC API – Features (Part 1: Core, GeoJSON, OpenAPI 3.0; Part 4: create, replace, update,
// delete, with ETags) over the sources: the landing page,
// conformance, the `sources` collection and its items, so GIS clients (QGIS, GDAL's OAPIF
// driver) open the registry like any feature service. The landing page and conformance reveal
// no data and need no token; the collection, its extent and its items are scoped like
// GET /sources/?id= (an organisation's own sources; admins all, or one organisation). Every
// link is absolute (GDAL 3.6 resolves relative ones wrongly).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { conflictsCollection } from '../conflicts/conflicts.collection.js'
import type { SourcesConfig } from '../config.js'
import { ApiError, errorResponses, summarise } from '../errors.js'
import { MERGE_PATCH, mergePatchOnly } from '../http/merge-patch.js'
import { OPENAPI_MEDIA_TYPE, noBody, sentAs } from '../http/openapi.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { headerDoc } from '../schemas/primitives.js'
import { featureOf } from '../sources/rejections.js'
import { createSources, patch, remove, replace, versionsPage } from '../sources/source-changes.js'
import { etagOf } from '../sources/source-feature.js'
import { CHANGED, CHANGE_ERRORS, CONTENT_CRS_HEADER, ETAG_HEADER, actorOf, sendRead, sendSource, versionsOf, writeOptionsOf } from '../sources/source-replies.js'
import { CRS84, type Crs, type CrsCatalogue, crsHeader, outputOf } from '../sources/crs.js'
import type { SourcesExtent } from '../sources/sources.listing.js'
import { ChangeConflictSchema, ConflictKeysHeadersSchema, CreateQuerySchema, CreateResponseSchema, DryRunResponseSchema, FeatureInputSchema, IdPropertySchema, MergePatchSchema, featureCollectionSchema } from '../sources/sources.schema.js'
import { SourceOrVersionSchema, VersionsResponseSchema } from '../sources/source-feature.schema.js'
import { PROPERTIES_DOCUMENT, QUERYABLE_PROPERTIES, RETURNABLE_PROPERTIES, SORTABLE_PROPERTIES } from '../sources/source-properties.js'
import type { SourceStore } from '../sources/sources.store.js'
import { decodeCursor, queryDigest } from './features.cursor.js'
import { itemsBody } from './features.pager.js'
import { ITEM_FORMATS, type FormatKey, formatByKey, formatByName, formattedItems } from './formats/formats.js'
import { sendHtmlPage } from './html-page.js'
import { parseItemsQuery } from './features.query.js'
import { ATTRIBUTE_PREFIX } from './filters/cql2.js'
import type { AttributeType, DeclaredAttribute } from '../sources/attribute-schemas.js'
import type { AttributeSchemaStore } from '../sources/attribute-schemas.store.js'
import {
  CollectionSchema, CollectionsSchema, ConformanceSchema, ItemParamsSchema, ItemReadQuerySchema, ItemVersionsQuerySchema, ItemsQuerySchema, ItemsSchema, LandingSchema, PropertiesSchemaSchema,
  QueryablesSchema, ReturnablesSchema, SortablesSchema
} from './features.schema.js'

const GEOJSON = 'application/geo+json'
const TAGS = ['OGC API – Features']
/** The classes this module passes; /conformance adds those of the other modules (`conformance`, from app.ts). */
export const FEATURES_CONFORMANCE = [
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30',
  // Part 2 (coordinate reference systems by reference: crs, bbox-crs, Content-Crs; src/sources/crs.ts)
  'http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs',
  // Part 3 (filtering) and the CQL2 classes its filters pass (test/features/filter.test.ts); not
  // case- and accent-insensitive comparison, arrays, functions, arithmetic. Each queryable but the
  // geometry is also a query parameter (features.query.ts queryableTerms).
  ...['filter', 'features-filter', 'queryables', 'queryables-query-parameters'].map((c) => `http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/${c}`),
  ...['cql2-text', 'cql2-json', 'basic-cql2', 'advanced-comparison-operators', 'basic-spatial-functions', 'basic-spatial-functions-plus',
    'spatial-functions', 'temporal-functions', 'property-property'].map((c) => `http://www.opengis.net/spec/cql2/1.0/conf/${c}`),
  // Part 4 (create, replace, update, delete; src/sources/source-changes.ts)
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/update',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/optimistic-locking-etags'
]
const SCHEMA_JSON = 'application/schema+json'

/** The service's own absolute base URL as the client reached it (X-Forwarded-* with TRUST_PROXY). */
const baseOf = (request: FastifyRequest): string => `${request.protocol}://${request.host}`

const JSON_TYPES = [GEOJSON, 'application/json']

/** 406 unless the client accepts GeoJSON or JSON (or anything); q-values as RFC 9110 has them (@fastify/accepts). */
function negotiate (request: FastifyRequest): void {
  const accept = request.headers.accept
  if (accept === undefined || accept.trim() === '') return
  if (request.accepts().type(JSON_TYPES) === false) throw new ApiError('NOT_ACCEPTABLE', `Cannot answer in ${JSON.stringify(accept)}: this resource is ${GEOJSON} or application/json.`)
}

/** The items' format: f= (checked by parseItemsQuery), else the Accept header's choice among ITEM_FORMATS (GeoJSON for none or a wildcard); 406 for none of them. */
function itemsFormat (request: FastifyRequest, f: string | undefined): FormatKey {
  if (f !== undefined) return (formatByName(f)?.key ?? 'geojson') as FormatKey
  const accept = request.headers.accept
  if (accept === undefined || accept.trim() === '') return 'geojson'
  const types = [...JSON_TYPES, ...ITEM_FORMATS.slice(1).map((t) => t.type)]
  const chosen = request.accepts().type(types)
  if (chosen === false) throw new ApiError('NOT_ACCEPTABLE', `Cannot answer in ${JSON.stringify(accept)}: the items are ${[GEOJSON, ...types.slice(2)].join(', ')}.`)
  return (ITEM_FORMATS.find((t) => t.type === chosen)?.key ?? 'geojson') as FormatKey
}

/** A response's content in JSON and, for people, as the HTML page (html-page.ts). */
function orHtml<T extends { content: Record<string, unknown> }> (response: T): T {
  return { ...response, content: { ...response.content, 'text/html': { schema: Type.String({ description: 'The page for people (f=html, or an Accept that prefers text/html): it shows this resource with the map page\'s session, or offers the sign-in.' }) } } }
}

const HTML_QUERY = Type.Object({ f: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('html')], { description: 'json (the default), or html: the page for people.' })) })

function collectionDoc (base: string, extent: SourcesExtent, catalogue: CrsCatalogue) {
  return {
    id: 'sources',
    title: 'Sources',
    description: 'Registered areas (Polygons and MultiPolygons) with their validity periods [start_at, end_at).',
    itemType: 'feature' as const,
    crs: catalogue.uris,
    storageCrs: CRS84,
    extent: {
      spatial: { bbox: extent.bbox === null ? [] : [extent.bbox], crs: CRS84 },
      temporal: { interval: [extent.interval], trs: 'http://www.opengis.net/def/uom/ISO-8601/0/Gregorian' }
    },
    links: [
      { href: `${base}/collections/sources`, rel: 'self', type: 'application/json', title: 'This collection' },
      { href: `${base}/collections/sources/items`, rel: 'items', type: GEOJSON, title: 'The sources' },
      { href: `${base}/collections/sources/schema`, rel: 'describedBy', type: SCHEMA_JSON, title: 'JSON Schema of the properties' },
      { href: `${base}/collections/sources/queryables`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/queryables', type: SCHEMA_JSON, title: 'What a filter may name' },
      { href: `${base}/collections/sources/sortables`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/sortables', type: SCHEMA_JSON, title: 'What sortby may name' },
      { href: `${base}/collections/sources/returnables`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/returnables', type: SCHEMA_JSON, title: 'What properties may name' },
      { href: `${base}/collections/sources/tiles`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector', type: 'application/json', title: 'Vector tiles (Mapbox Vector Tile)' },
      ...ITEM_FORMATS.slice(1).map((t) => ({ href: `${base}/collections/sources/items?f=${t.f[0]}`, rel: 'items', type: t.type, title: `The sources as ${t.title}` })),
      { href: `${base}/collections/sources?f=html`, rel: 'alternate', type: 'text/html', title: 'This collection as a page' }
    ]
  }
}

/** A declared attribute as a queryable: its JSON type (and format) and what the organisation says of it. */
function attributeQueryable (a: DeclaredAttribute): Record<string, string> {
  return {
    title: a.title ?? a.name,
    description: a.description ?? `The attribute ${a.name}, declared by your organisation.`,
    ...(a.type === 'timestamp' ? { type: 'string', format: 'date-time' } : { type: a.type })
  }
}

interface Options {
  config: SourcesConfig
  store: SourceStore
  schemas: AttributeSchemaStore
  /** The conformance classes of the other modules (tiles'), declared beside these. */
  conformance: readonly string[]
  /** The CRSs served (crs, bbox-crs, Content-Crs). */
  catalogue: CrsCatalogue
}

const featuresRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { config, store, schemas, conformance, catalogue }) => {
  /** The declared attributes of the caller's organisation (an admin's own), as a filter types them. */
  const declaredOf = async (organisation: string): Promise<ReadonlyMap<string, AttributeType>> =>
    new Map((await schemas.recent(organisation))?.declared.map((a) => [a.name, a.type]) ?? [])

  const conformsTo = [...FEATURES_CONFORMANCE, ...conformance]
  app.addContentTypeParser('application/geo+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  app.get('/', {
    onRequest: [sendHtmlPage],
    schema: { operationId: 'getLandingPage', summary: 'OGC API landing page', tags: TAGS, security: [], querystring: HTML_QUERY, response: { 200: orHtml(sentAs('application/json', LandingSchema, 'The landing page.')), ...errorResponses(400, 429, 500) } }
  }, async (request) => {
    const base = baseOf(request)
    return {
      title: 'Source Registry',
      description: 'Registered areas with their validity periods, as OGC API – Features. Every data request needs "Authorization: Bearer <token>" (POST /token), or an API key (POST /api-keys) as a bearer token or as the password of HTTP Basic.',
      links: [
        { href: `${base}/`, rel: 'self', type: 'application/json', title: 'This document' },
        { href: `${base}/?f=html`, rel: 'alternate', type: 'text/html', title: 'This document as a page' },
        { href: `${base}/openapi.json`, rel: 'service-desc', type: OPENAPI_MEDIA_TYPE, title: 'The OpenAPI definition' },
        { href: `${base}/conformance`, rel: 'conformance', type: 'application/json', title: 'Conformance classes' },
        { href: `${base}/collections`, rel: 'data', type: 'application/json', title: 'The collections' },
        { href: `${base}/map`, rel: 'service-doc', type: 'text/html', title: 'The map page: your sources on a map' }
      ]
    }
  })

  app.get('/conformance', {
    schema: { operationId: 'getConformanceDeclaration', summary: 'Conformance classes', tags: TAGS, security: [], response: { 200: ConformanceSchema, ...errorResponses(429, 500) } }
  }, async () => ({ conformsTo }))

  app.get('/collections', {
    onRequest: [sendHtmlPage, app.authenticate],
    schema: { operationId: 'getCollections', summary: 'The collections', tags: TAGS, security: SECURITY, querystring: HTML_QUERY, response: { 200: orHtml(sentAs('application/json', CollectionsSchema, 'The collections.')), ...errorResponses(400, 401, 429, 500, 503) } }
  }, async (request) => {
    const base = baseOf(request)
    return {
      collections: [collectionDoc(base, await store.extent(request.account.scope), catalogue), conflictsCollection(base)],
      links: [{ href: `${base}/collections`, rel: 'self', type: 'application/json' }]
    }
  })

  app.get('/collections/sources', {
    onRequest: [sendHtmlPage, app.authenticate],
    schema: { operationId: 'describeCollection', summary: 'The sources collection, its extent in your scope', tags: TAGS, security: SECURITY, querystring: HTML_QUERY, response: { 200: orHtml(sentAs('application/json', CollectionSchema, 'The collection.')), ...errorResponses(400, 401, 429, 500, 503) } }
  }, async (request) => collectionDoc(baseOf(request), await store.extent(request.account.scope), catalogue))

  app.get('/collections/sources/schema', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getCollectionSchema',
      summary: 'JSON Schema of the properties of a source',
      tags: TAGS,
      security: SECURITY,
      response: { 200: sentAs('application/schema+json', PropertiesSchemaSchema, 'The JSON Schema (2020-12) of a source\'s properties.'), ...errorResponses(401, 429, 500, 503) }
    }
  }, async (request, reply) => {
    // The organisation's declared attributes beside the service's properties (its view: an admin's own organisation's).
    const declared = (await schemas.recent(request.account.organisation))?.schema
    const attributes = declared?.properties as Record<string, unknown> | undefined
    // Sent as text: the response serializer would keep only the members its schema describes.
    const untyped: FastifyReply = reply
    return untyped.type(SCHEMA_JSON).send(JSON.stringify({
      $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'sources', ...PROPERTIES_DOCUMENT,
      properties: { ...PROPERTIES_DOCUMENT.properties, ...attributes },
      ...(declared?.required !== undefined ? { required: declared.required } : {})
    }))
  })

  /**
   * A JSON Schema document of some properties (queryables, sortables, returnables): the service's,
   * then the attributes the caller's organisation declared (each of those is all three). Sent as
   * text: the response serializer would keep only the members its schema describes.
   */
  const propertiesDocument = (name: string, description: string, properties: Record<string, unknown>) => async (request: FastifyRequest, reply: FastifyReply) =>
    await reply.type(SCHEMA_JSON).send(JSON.stringify({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `${baseOf(request)}/collections/sources/${name}`,
      type: 'object',
      title: 'sources',
      description,
      properties: { ...properties, ...Object.fromEntries(((await schemas.recent(request.account.organisation))?.declared ?? []).filter((a) => !(a.name in properties)).map((a) => [a.name, attributeQueryable(a)])) },
      additionalProperties: false
    }))

  app.get('/collections/sources/queryables', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getQueryables',
      summary: 'The queryables: what a CQL2 filter may name (JSON Schema)',
      tags: TAGS,
      security: SECURITY,
      response: { 200: { content: { [SCHEMA_JSON]: { schema: QueryablesSchema } } }, ...errorResponses(401, 429, 500, 503) }
    }
  }, propertiesDocument('queryables', `The properties a filter on /collections/sources/items may name: the service's, and the attributes your organisation declared (PUT /organisations/{organisation}/attributes-schema). Any other attribute is named ${ATTRIBUTE_PREFIX}name and compared as the literal's type.`, QUERYABLE_PROPERTIES))

  app.get('/collections/sources/sortables', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getSortables',
      summary: 'The sortables: what sortby may name (JSON Schema)',
      tags: TAGS,
      security: SECURITY,
      response: { 200: { content: { [SCHEMA_JSON]: { schema: SortablesSchema } } }, ...errorResponses(401, 429, 500, 503) }
    }
  }, propertiesDocument('sortables', 'The properties sortby on /collections/sources/items may name (the service\'s, and the attributes your organisation declared), each with "-" in front for descending; the order always ends with id. A source without a declared attribute sorts after the others ascending, before them descending.', SORTABLE_PROPERTIES))

  app.get('/collections/sources/returnables', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getReturnables',
      summary: 'The returnables: what properties may name (JSON Schema)',
      tags: TAGS,
      security: SECURITY,
      response: { 200: { content: { [SCHEMA_JSON]: { schema: ReturnablesSchema } } }, ...errorResponses(401, 429, 500, 503) }
    }
  }, propertiesDocument('returnables', 'The properties that properties= on /collections/sources/items may choose (the service\'s, and the attributes your organisation declared; undeclared attributes are sent only when properties= is absent); the geometry is sent unless skipGeometry=true.', RETURNABLE_PROPERTIES))

  app.get('/collections/sources/items', {
    onRequest: [sendHtmlPage, app.authenticate],
    schema: {
      operationId: 'getFeatures',
      summary: 'Sources, filtered and paged: GeoJSON, GeoJSON text sequence, NDJSON, CSV, FlatGeobuf or a page for people (f= or Accept)',
      tags: TAGS,
      security: SECURITY,
      querystring: ItemsQuerySchema,
      response: {
        200: orHtml({
          ...sentAs(GEOJSON, ItemsSchema, 'A page of sources; a next link when there are more. In the other formats, the next page is the Link header\'s rel="next" (sent with FlatGeobuf, and with the text formats when the page fits in one query of ITEMS_ROWS_PER_QUERY rows; a larger page is streamed without it).', { Link: headerDoc('rel="next": the next page, in the same format (not with GeoJSON, whose body has it).'), 'Content-Crs': CONTENT_CRS_HEADER }),
          content: {
            [GEOJSON]: { schema: ItemsSchema },
            'application/geo+json-seq': { schema: Type.String({ description: 'RFC 8142: each Feature (as in GeoJSON) after an ASCII record separator (0x1E), ended by a line feed.' }) },
            'application/x-ndjson': { schema: Type.String({ description: 'Each Feature (as in GeoJSON) on a line of its own.' }) },
            'text/csv': { schema: Type.String({ description: 'RFC 4180, a header line: WKT (the geometry, CRS84), id, then one column per property; lists and objects as JSON text.' }) },
            'application/flatgeobuf': { schema: Type.String({ format: 'binary', description: 'FlatGeobuf (EPSG:4326) with its packed Hilbert R-tree index: id, then one column per property.' }) }
          }
        }),
        ...errorResponses(400, 401, 406, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const format = itemsFormat(request, request.query.f)
    const account = request.account
    // A filter, sortby or properties may name the organisation's declared attributes: read only when one is given.
    const q = request.query
    const declared = q.filter === undefined && q.sortby === undefined && q.properties === undefined ? undefined : await declaredOf(account.organisation)
    const { parsed, details } = parseItemsQuery(q, account.scope === 'all', catalogue, declared)
    // What a cursor is bound to; hashed only when a cursor is read or written.
    const digest = (): string => queryDigest(parsed.filter, parsed.sort)
    if (request.query.cursor !== undefined && details.length === 0) {
      const after = decodeCursor(request.query.cursor, digest(), parsed.sort)
      if (typeof after === 'string') details.push({ pointer: '?cursor', message: after })
      else parsed.after = after
    }
    if (details.length === 0 && parsed.geometries.length > 0) {
      const problems = await store.geometryProblems(parsed.geometries)
      for (const [i, reason] of problems.entries()) {
        if (reason !== null) details.push({ pointer: '?filter', message: `geometry literal ${i + 1} (a line or polygon) is not valid: ${reason}`, reason })
      }
    }
    if (details.length > 0) throw new ApiError('VALIDATION_FAILED', summarise(details), { details })

    const self = new URL(request.url, baseOf(request))
    const page = { store, scope: account.scope, parsed, self, digest, rowsPerQuery: config.ITEMS_ROWS_PER_QUERY, countMax: config.ITEMS_COUNT_MAX }
    const untyped: FastifyReply = reply.header('content-crs', crsHeader(parsed.crs))
    if (format === 'geojson' || format === 'html') return untyped.type(GEOJSON).send(await itemsBody(page))
    const { body, next } = await formattedItems(page, format)
    const type = formatByKey(format).type
    if (next !== undefined) void untyped.header('link', `<${next.toString()}>; rel="next"; type="${type}"`)
    return untyped.type(format === 'csv' ? 'text/csv; charset=utf-8' : type).header('content-disposition', `inline; filename="sources.${formatByKey(format).extension}"`).send(body)
  })

  /** The crs parameter of a read: CRS84 when absent (Part 2: Content-Crs on every answer with features), 400 listing those served when unknown. */
  const readCrs = (text: string | undefined) => catalogue.read(text) ?? catalogue.read(CRS84) as Crs

  app.get('/collections/sources/items/:id', {
    onRequest: [sendHtmlPage, app.authenticate],
    schema: {
      operationId: 'getFeature',
      summary: 'One source (the same Feature as GET /sources/?id=; with as_of, as the registry held it then)',
      tags: TAGS,
      security: SECURITY,
      params: ItemParamsSchema,
      querystring: ItemReadQuerySchema,
      response: {
        200: orHtml(sentAs(GEOJSON, SourceOrVersionSchema, 'The source; with as_of, the version held then.', { ETag: ETAG_HEADER, 'Content-Crs': CONTENT_CRS_HEADER })),
        304: noBody('Not modified: If-None-Match names the current version.', { ETag: ETAG_HEADER }),
        ...errorResponses(400, 401, 404, 406, 410, 414, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    negotiate(request)
    const untyped: FastifyReply = reply
    return await sendRead(store, request, untyped, request.params.id, request.query.as_of, readCrs(request.query.crs))
  })

  app.get('/collections/sources/items/:id/versions', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getFeatureVersions',
      summary: 'Every version of one source, newest first (deleted sources too)',
      tags: TAGS,
      security: SECURITY,
      params: ItemParamsSchema,
      querystring: ItemVersionsQuerySchema,
      response: { 200: { ...VersionsResponseSchema, headers: { 'Content-Crs': CONTENT_CRS_HEADER } }, ...errorResponses(400, 401, 404, 414, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const self = new URL(request.url, baseOf(request))
    const crs = readCrs(request.query.crs)
    void reply.header('content-crs', crsHeader(crs))
    return await versionsPage(store, request.account.scope, request.params.id, self, Number(request.query.limit ?? 100), request.query.cursor, { crs: outputOf(crs) })
  })

  app.post('/collections/sources/items', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', describeBodyPointer: featureOf, mediaTypes: ['application/json', 'application/geo+json'] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    ...app.largeBodies,
    schema: {
      operationId: 'createFeatures',
      summary: 'Create sources from one GeoJSON Feature or a FeatureCollection (as POST /sources)',
      tags: TAGS,
      security: WRITE_SECURITY,
      consumes: ['application/json', 'application/geo+json'],
      querystring: CreateQuerySchema,
      headers: ConflictKeysHeadersSchema,
      body: Type.Union([FeatureInputSchema, featureCollectionSchema(config.MAX_FEATURES)]),
      response: {
        200: DryRunResponseSchema,
        201: {
          ...CreateResponseSchema,
          headers: { Location: headerDoc('When one source was created: its item\'s URL.'), ETag: headerDoc('When one source was created: W/"1", its first version.') }
        },
        ...errorResponses(400, 401, 403, 408, 409, 413, 415, 422, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const body = request.body
    const fc = body.type === 'Feature' ? { type: 'FeatureCollection' as const, features: [body] } : body
    const { organisation, id: accountId } = request.account
    const created = await createSources(store, schemas, { organisation, accountId }, fc, request.query, config.CONFLICT_POLICY, writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))
    if (created.status === 201 && created.body.id !== undefined) void reply.header('location', `${baseOf(request)}/collections/sources/items/${created.body.id}`).header('etag', etagOf(1))
    return await reply.code(created.status).send(created.body)
  })

  app.put('/collections/sources/items/:id', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', mediaTypes: ['application/json', 'application/geo+json'] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'replaceFeature',
      summary: 'Replace one source with a GeoJSON Feature (If-Match required)',
      tags: TAGS,
      security: WRITE_SECURITY,
      consumes: ['application/json', 'application/geo+json'],
      params: ItemParamsSchema,
      querystring: Type.Object({ id_property: Type.Optional(IdPropertySchema), on_conflict: Type.Optional(ChangeConflictSchema) }),
      headers: ConflictKeysHeadersSchema,
      body: FeatureInputSchema,
      response: { 200: CHANGED, ...errorResponses(...CHANGE_ERRORS, 414) }
    }
  }, async (request, reply) => sendSource(reply as FastifyReply, await replace(store, schemas, actorOf(request), request.params.id, versionsOf(request, true), request.body, request.query.id_property,
    writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))))

  app.patch('/collections/sources/items/:id', {
    config: { bodyValidationCode: 'INVALID_GEOJSON', mediaTypes: [MERGE_PATCH] },
    onRequest: [app.authenticate, app.requireRole('admin', 'editor'), mergePatchOnly],
    schema: {
      operationId: 'updateFeature',
      summary: 'Change one source with a JSON merge patch (RFC 7396; If-Match required)',
      tags: TAGS,
      security: WRITE_SECURITY,
      consumes: [MERGE_PATCH],
      params: ItemParamsSchema,
      querystring: Type.Object({ on_conflict: Type.Optional(ChangeConflictSchema) }),
      headers: ConflictKeysHeadersSchema,
      body: MergePatchSchema,
      response: { 200: CHANGED, ...errorResponses(...CHANGE_ERRORS, 414) }
    }
  }, async (request, reply) => sendSource(reply as FastifyReply, await patch(store, schemas, actorOf(request), request.params.id, versionsOf(request, true), request.body,
    writeOptionsOf(request, catalogue, request.query.on_conflict, config.CONFLICT_POLICY))))

  app.delete('/collections/sources/items/:id', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'deleteFeature',
      summary: 'Delete one source (If-Match honoured when sent); its versions stay readable',
      tags: TAGS,
      security: WRITE_SECURITY,
      params: ItemParamsSchema,
      response: { 204: noBody('Deleted.'), ...errorResponses(400, 401, 403, 404, 408, 410, 412, 413, 414, 415, 429, 500, 503) }
    }
  }, async (request, reply) => {
    await remove(store, actorOf(request), request.params.id, versionsOf(request, false))
    return await (reply as FastifyReply).code(204).send()
  })
}

export default featuresRoutes
