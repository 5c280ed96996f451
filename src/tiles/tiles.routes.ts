// OGC API – Tiles (Part 1: core, tileset, tilesets-list, geodata-tilesets, MVT) for the sources
// collection, and the same tiles as TileJSON 3.0. One tile matrix set, WebMercatorQuad, zoom
// 0–22; tiles are scoped and filtered like items (the token's organisation, an admin's
// organisation parameter, datetime). An empty tile is 204. ETags follow the data: they hash the
// caller's scope, the filters, the tile and the database's change counters around it
// (sql/functions/tile_changes.sql), so a write anywhere in a tile changes its ETag on every
// instance, and If-None-Match answers 304 without drawing the tile. A tile is drawn with its
// counters in one statement, so its ETag is exact for its bytes.
import { SECURITY } from '../http/security.js'
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TilesConfig } from '../config.js'
import { ApiError, type ErrorDetail, errorResponses, summarise } from '../errors.js'
import type { AdmissionQueue } from '../http/admission-queue.js'
import { parseDatetimeParameter } from '../sources/datetime.js'
import { MAX_ZOOM, type Tile } from './tile-matrix.js'
import type { TileFilter } from './tiles.repository.js'
import type { TileStore } from './tiles.store.js'
import { MVT, TILE_FIELDS, TileJsonSchema, TileParamsSchema, TileQuerySchema, TileSetSchema, TileSetsSchema } from './tiles.schema.js'

const TMS_URI = 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad'
const TMS_DEFINITION = 'https://schemas.opengis.net/tms/2.0/json/examples/tilematrixset/WebMercatorQuad.json'
const EPSG_3857 = 'http://www.opengis.net/def/crs/EPSG/0/3857'
const TAGS = ['OGC API – Tiles']
/** The classes this module passes, declared on /conformance beside OGC API – Features' (app.ts). */
export const TILES_CONFORMANCE = ['core', 'tileset', 'tilesets-list', 'geodata-tilesets', 'mvt'].map((c) => `http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/${c}`)
// Tiles are read like items: a token, or an API key as bearer or Basic (plugins/auth.ts).
const security = SECURITY
/** Changes with anything that changes how a tile is drawn from the same rows. */
const DRAWING = 'mvt-1'

const baseOf = (request: FastifyRequest): string => `${request.protocol}://${request.host}`
const tilesUrl = (base: string): string => `${base}/collections/sources/tiles/WebMercatorQuad`

interface Options {
  config: TilesConfig
  store: TileStore
  /** Tiles drawn at once (TILES_CONCURRENCY) and waiting (TILES_QUEUE). */
  drawing: AdmissionQueue
}

const NUL = '\u0000'

function parseFilter (query: { datetime?: string, organisation?: string }, isAdmin: boolean, details: ErrorDetail[]): TileFilter {
  const filter: TileFilter = {}
  if (query.datetime !== undefined) filter.datetime = parseDatetimeParameter(query.datetime, details)
  if (query.organisation !== undefined) {
    if (!isAdmin) details.push({ pointer: '?organisation', message: 'only admins may filter by organisation (others see their own)' })
    else if (query.organisation.includes(NUL)) details.push({ pointer: '?organisation', message: 'must not contain the character U+0000' })
    else filter.organisation = query.organisation
  }
  return filter
}

/**
 * z/row/col as the path has them: whole numbers (else 400), inside the tile matrix set (else 404).
 * The column may end in .pbf or .mvt: GDAL's MVT driver (3.6) opens a tile URL only with one.
 */
function parseTile (params: { tileMatrix: string, tileRow: string, tileCol: string }): Tile {
  const details: ErrorDetail[] = []
  const whole = (text: string, name: string): number => {
    if (!/^\d+$/.test(text)) details.push({ pointer: `/${name}`, message: 'must be a whole number, 0 or more' })
    return Number(text)
  }
  const z = whole(params.tileMatrix, 'tileMatrix')
  const y = whole(params.tileRow, 'tileRow')
  const x = whole(params.tileCol.replace(/\.(?:pbf|mvt)$/, ''), 'tileCol')
  if (details.length > 0) throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  if (z > MAX_ZOOM) throw new ApiError('NOT_FOUND', `No tile matrix ${z} in WebMercatorQuad: zoom is 0 to ${MAX_ZOOM}.`)
  if (x >= 2 ** z || y >= 2 ** z) throw new ApiError('NOT_FOUND', `No tile ${z}/${y}/${x}: at zoom ${z} rows and columns are 0 to ${2 ** z - 1}.`)
  return { z, x, y }
}

/** RFC 9110 If-None-Match: weak comparison, any of a list, or "*". */
function matches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const opaque = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t.replace(/^W\//, '') === opaque
  })
}

const tilesRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { config, store, drawing }) => {
  const { TILES_MAX_FEATURES: maxFeatures, TILES_MAX_BYTES: maxBytes, TILES_MAX_AGE_SECONDS: maxAgeSeconds } = config
  const tileSet = (base: string) => ({
    title: 'Sources',
    dataType: 'vector' as const,
    crs: EPSG_3857,
    tileMatrixSetURI: TMS_URI,
    links: [
      { href: tilesUrl(base), rel: 'self', type: 'application/json', title: 'This tileset' },
      { href: TMS_DEFINITION, rel: 'http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme', type: 'application/json', title: 'WebMercatorQuad' },
      { href: `${tilesUrl(base)}/{tileMatrix}/{tileRow}/{tileCol}`, rel: 'item', type: MVT, templated: true, title: 'A tile (Mapbox Vector Tile)' },
      { href: `${tilesUrl(base)}/tilejson.json`, rel: 'alternate', type: 'application/json', title: 'TileJSON 3.0' },
      { href: `${base}/collections/sources`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/geodata', type: 'application/json', title: 'The collection' }
    ]
  })

  app.get('/collections/sources/tiles', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getTileSets', summary: 'The vector tilesets of the sources', tags: TAGS, security, response: { 200: TileSetsSchema, ...errorResponses(401, 429, 500, 503) } }
  }, async (request) => {
    const base = baseOf(request)
    const { title, dataType, crs, tileMatrixSetURI, links } = tileSet(base)
    return {
      tilesets: [{ title, dataType, crs, tileMatrixSetURI, links: links.filter((l) => l.rel === 'self' || l.rel.endsWith('tiling-scheme')) }],
      links: [{ href: `${base}/collections/sources/tiles`, rel: 'self', type: 'application/json', title: 'The tilesets' }]
    }
  })

  app.get('/collections/sources/tiles/WebMercatorQuad', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getTileSet', summary: 'The sources\' vector tileset in WebMercatorQuad', tags: TAGS, security, response: { 200: TileSetSchema, ...errorResponses(401, 429, 500, 503) } }
  }, async (request) => ({
    ...tileSet(baseOf(request)),
    layers: [{
      id: 'sources',
      dataType: 'vector' as const,
      geometryDimension: 2,
      minTileMatrix: '0',
      maxTileMatrix: String(MAX_ZOOM),
      propertiesSchema: {
        type: 'object' as const,
        properties: TILE_FIELDS
      }
    }]
  }))

  app.get('/collections/sources/tiles/WebMercatorQuad/tilejson.json', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getTileJson', summary: 'The sources\' vector tiles as TileJSON 3.0', tags: TAGS, security, response: { 200: TileJsonSchema, ...errorResponses(401, 429, 500, 503) } }
  }, async (request) => ({
    tilejson: '3.0.0' as const,
    name: 'sources',
    tiles: [`${tilesUrl(baseOf(request))}/{z}/{y}/{x}`],
    scheme: 'xyz' as const,
    minzoom: 0,
    maxzoom: MAX_ZOOM,
    bounds: [-180, -85.0511287798066, 180, 85.0511287798066],
    vector_layers: [{
      id: 'sources',
      description: 'Registered areas with their validity periods',
      minzoom: 0,
      maxzoom: MAX_ZOOM,
      fields: Object.fromEntries(Object.entries(TILE_FIELDS).map(([name, f]) => [name, f.description]))
    }]
  }))

  app.get('/collections/sources/tiles/WebMercatorQuad/:tileMatrix/:tileRow/:tileCol', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getTile',
      summary: 'A vector tile of the sources (Mapbox Vector Tile, layer "sources")',
      description: 'Path order as OGC API – Tiles: zoom, row (y, from the north), column (x). 204 when no source is drawn in the tile. ETag and If-None-Match (304) follow writes.',
      tags: TAGS,
      security,
      params: TileParamsSchema,
      querystring: TileQuerySchema,
      response: {
        200: { description: 'The tile', content: { [MVT]: { schema: { type: 'string', format: 'binary' } } } },
        204: { description: 'No source is drawn in this tile', type: 'null' },
        304: { description: 'Not modified since the ETag in If-None-Match', type: 'null' },
        ...errorResponses(400, 401, 404, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const tile = parseTile(request.params)
    const account = request.account
    const details: ErrorDetail[] = []
    const filter = parseFilter(request.query, account.role === 'admin', details)
    if (details.length > 0) throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
    const scope = account.scope
    const etagOf = (changes: string): string => `"${createHash('sha256')
      .update(JSON.stringify([DRAWING, maxFeatures, maxBytes, scope, filter, tile.z, tile.x, tile.y, changes]))
      .digest('base64url').slice(0, 27)}"`
    void reply.header('cache-control', `private, max-age=${maxAgeSeconds}`).header('vary', 'Authorization')
    // A revalidation reads the counters alone; a match is 304 without drawing.
    const ifNoneMatch = request.headers['if-none-match']
    if (ifNoneMatch !== undefined) {
      const etag = etagOf(await store.changes(tile))
      if (matches(ifNoneMatch, etag)) return await reply.header('etag', etag).code(304).send()
    }
    // Drawn TILES_CONCURRENCY at a time: sixteen zoomed-out tiles at once would otherwise hold
    // every pool connection for seconds, and the requests behind them would fail waiting for one.
    const admitted = await drawing.admit((cancel) => reply.raw.once('close', cancel))
    // The client left while its tile waited: 499 (nginx's "client closed request") for the log.
    if (admitted === 'cancelled') return await (reply as FastifyReply).code(499).send()
    if (admitted === 'full') {
      throw new ApiError('SERVICE_UNAVAILABLE', `The server is busy drawing other tiles (${drawing.concurrency} at a time, ${drawing.maxWaiting} waiting); retry in a moment.`, { headers: { 'retry-after': '1' } })
    }
    let drawn: { mvt: Buffer, changes: string }
    try {
      drawn = await store.tile({ tile, scope, filter, maxFeatures })
    } finally {
      admitted()
    }
    // The ETag of the counters read with the bytes (a write after a revalidation's read is in both).
    const { mvt, changes } = drawn
    void reply.header('etag', etagOf(changes))
    if (mvt.length === 0) return await reply.code(204).send()
    return await reply.type(MVT).send(mvt)
  })
}

export default tilesRoutes
