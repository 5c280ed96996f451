// OGC API – Tiles (Part 1: core, tileset, tilesets-list, geodata-tilesets, tilematrixset, MVT)
// for the sources collection, the same tiles as TileJSON 3.0, and a z/x/y alias of them for
// clients that read a tileset as a {z}/{x}/{y}.pbf tree (GDAL's MVT driver). One tile matrix set,
// WebMercatorQuad, zoom 0–22, defined at /tileMatrixSets; tiles are scoped and filtered like items
// (the token's organisation, an admin's organisation parameter, datetime). An empty tile is 204
// on the OGC path and an MVT layer without features on the alias. ETags follow the data: they
// hash the caller's scope, the filters, the tile and the database's change counters around it
// (sql/functions/tile_changes.sql), so a write anywhere in a tile changes its ETag on every
// instance, and If-None-Match answers 304 without drawing the tile. A tile is drawn with its
// counters in one statement, so its ETag is exact for its bytes; a tile drawn before is sent
// from memory while those counters stand (TILES_CACHE_BYTES, tiles.store.ts).
import { SECURITY } from '../http/security.js'
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TilesConfig } from '../config.js'
import { ApiError, type ErrorDetail, errorResponses, summarise } from '../errors.js'
import type { Admission, AdmissionQueue } from '../http/admission-queue.js'
import { parseDatetimeParameter } from '../sources/datetime.js'
import { EXTENT, MAX_LAT, MAX_ZOOM, type Tile, webMercatorQuad } from './tile-matrix.js'
import type { TileFilter } from './tiles.repository.js'
import type { Bbox, TileStore } from './tiles.store.js'
import { emptyMvtLayer } from './mvt-encode.js'
import { MVT, TILE_FIELDS, TileJsonSchema, TileMatrixSetSchema, TileMatrixSetsSchema, TileParamsSchema, TileQuerySchema, TileSetSchema, TileSetsSchema, XyzParamsSchema } from './tiles.schema.js'

const TMS = webMercatorQuad()
const EPSG_3857 = 'http://www.opengis.net/def/crs/EPSG/0/3857'
const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
const TAGS = ['OGC API – Tiles']
/** The classes this module passes, declared on /conformance beside OGC API – Features' (app.ts). */
export const TILES_CONFORMANCE = ['core', 'tileset', 'tilesets-list', 'geodata-tilesets', 'tilematrixset', 'mvt'].map((c) => `http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/${c}`)
/** The answer of the z/x/y alias for a tile without sources. */
const EMPTY_TILE = emptyMvtLayer(EXTENT)
// Tiles are read like items: a token, or an API key as bearer or Basic (plugins/auth.ts).
const security = SECURITY
/** Changes with anything that changes how a tile is drawn from the same rows. */
const DRAWING = 'mvt-1'

const baseOf = (request: FastifyRequest): string => `${request.protocol}://${request.host}`
const tilesUrl = (base: string): string => `${base}/collections/sources/tiles/WebMercatorQuad`
const tmsUrl = (base: string): string => `${base}/tileMatrixSets/WebMercatorQuad`
/** The world as Web Mercator draws it: TileJSON's default bounds. */
const WORLD: Bbox = [-180, -MAX_LAT, 180, MAX_LAT]
/** A box within Web Mercator's latitudes. */
const inMercator = ([w, s, e, n]: Bbox): Bbox => [w, Math.max(s, -MAX_LAT), e, Math.min(n, MAX_LAT)]

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

type Axis = 'z' | 'x' | 'y'

/**
 * z, column and row as a path has them (`names`: what the path calls each, for the pointers):
 * whole numbers (else 400), inside the tile matrix set (else 404). The last segment may end in
 * .pbf or .mvt: GDAL's MVT driver (3.6) opens a tile URL only with one.
 */
function parseTile (text: Record<Axis, string>, names: Record<Axis, string>, last: Axis): Tile {
  const details: ErrorDetail[] = []
  const whole = (axis: Axis): number => {
    const digits = axis === last ? text[axis].replace(/\.(?:pbf|mvt)$/, '') : text[axis]
    if (!/^\d+$/.test(digits)) details.push({ pointer: `/${names[axis]}`, message: 'must be a whole number, 0 or more' })
    return Number(digits)
  }
  const z = whole('z')
  const y = whole('y')
  const x = whole('x')
  if (details.length > 0) throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  if (z > MAX_ZOOM) throw new ApiError('NOT_FOUND', `No tile matrix ${z} in WebMercatorQuad: zoom is 0 to ${MAX_ZOOM}.`)
  if (x >= 2 ** z || y >= 2 ** z) throw new ApiError('NOT_FOUND', `No tile at zoom ${z}, row ${y}, column ${x}: at zoom ${z} rows and columns are 0 to ${2 ** z - 1}.`)
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
    tileMatrixSetURI: TMS.uri,
    links: [
      { href: tilesUrl(base), rel: 'self', type: 'application/json', title: 'This tileset' },
      { href: tmsUrl(base), rel: 'http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme', type: 'application/json', title: 'WebMercatorQuad' },
      { href: `${tilesUrl(base)}/{tileMatrix}/{tileRow}/{tileCol}`, rel: 'item', type: MVT, templated: true, title: 'A tile (Mapbox Vector Tile)' },
      { href: `${tilesUrl(base)}/tilejson.json`, rel: 'alternate', type: 'application/json', title: 'TileJSON 3.0' },
      { href: `${base}/collections/sources`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/geodata', type: 'application/json', title: 'The collection' }
    ]
  })

  app.get('/tileMatrixSets', {
    schema: { operationId: 'getTileMatrixSets', summary: 'The tiling schemes of the tilesets', tags: TAGS, security: [], response: { 200: TileMatrixSetsSchema, ...errorResponses(429, 500) } }
  }, async (request) => {
    const base = baseOf(request)
    return {
      tileMatrixSets: [{ id: TMS.id, title: TMS.title, uri: TMS.uri, links: [{ href: tmsUrl(base), rel: 'self', type: 'application/json', title: 'WebMercatorQuad' }] }],
      links: [{ href: `${base}/tileMatrixSets`, rel: 'self', type: 'application/json', title: 'The tiling schemes' }]
    }
  })

  app.get('/tileMatrixSets/WebMercatorQuad', {
    schema: { operationId: 'getTileMatrixSet', summary: 'WebMercatorQuad (OGC Two Dimensional Tile Matrix Set 2.0)', tags: TAGS, security: [], response: { 200: TileMatrixSetSchema, ...errorResponses(429, 500) } }
  }, async () => TMS)

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
  }, async (request) => {
    const bbox = await store.extent(request.account.scope)
    return {
      ...tileSet(baseOf(request)),
      ...(bbox === null ? {} : { boundingBox: { lowerLeft: [bbox[0], bbox[1]], upperRight: [bbox[2], bbox[3]], crs: CRS84 } }),
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
    }
  })

  app.get('/collections/sources/tiles/WebMercatorQuad/tilejson.json', {
    onRequest: [app.authenticate],
    schema: { operationId: 'getTileJson', summary: 'The sources\' vector tiles as TileJSON 3.0', tags: TAGS, security, response: { 200: TileJsonSchema, ...errorResponses(401, 429, 500, 503) } }
  }, async (request) => {
    const bbox = await store.extent(request.account.scope)
    return {
      tilejson: '3.0.0' as const,
      name: 'sources',
      tiles: [`${tilesUrl(baseOf(request))}/{z}/{y}/{x}`],
      scheme: 'xyz' as const,
      minzoom: 0,
      maxzoom: MAX_ZOOM,
      bounds: bbox === null ? WORLD : inMercator(bbox),
      vector_layers: [{
        id: 'sources',
        description: 'Registered areas with their validity periods',
        minzoom: 0,
        maxzoom: MAX_ZOOM,
        fields: Object.fromEntries(Object.entries(TILE_FIELDS).map(([name, f]) => [name, f.description]))
      }]
    }
  })

  /**
   * A drawing slot for the request's tile, its waiting place withdrawn when the client goes away.
   * A client that left during the reads before (authentication, the cache's counters) has had its
   * 'close' already: it gets 'cancelled' at once, neither a place nobody would give back nor a
   * tile drawn for nobody (as plugins/large-bodies.ts). No turn of the event loop passes between
   * the check and admit()'s registration of the cancel, so a 'close' after it is heard.
   */
  const admit = async (reply: FastifyReply): Promise<Admission> => {
    if (reply.raw.closed) return 'cancelled'
    return await drawing.admit((cancel) => reply.raw.once('close', cancel))
  }

  /** One tile to the caller: 304 on a matching If-None-Match, else drawn; `empty` when no source is drawn in it. */
  const sendTile = async (request: FastifyRequest<{ Querystring: { datetime?: string, organisation?: string } }>, reply: FastifyReply, tile: Tile, empty: 204 | Buffer) => {
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
    let changes: string | undefined
    if (ifNoneMatch !== undefined) {
      changes = await store.changes(tile)
      const etag = etagOf(changes)
      if (matches(ifNoneMatch, etag)) return await reply.header('etag', etag).code(304).send()
    }
    const input = { tile, scope, filter, maxFeatures }
    // Drawn before and nothing written around it since (TILES_CACHE_BYTES): from memory, not queued.
    const kept = await store.cached(input, changes)
    if (kept !== undefined) return await sendDrawn(reply, kept, etagOf, empty)
    // Drawn TILES_CONCURRENCY at a time: sixteen zoomed-out tiles at once would otherwise hold
    // every pool connection for seconds, and the requests behind them would fail waiting for one.
    const admitted = await admit(reply)
    // The client left before or while its tile waited: 499 (nginx's "client closed request") for the log.
    if (admitted === 'cancelled') return await reply.code(499).send()
    if (admitted === 'full') {
      throw new ApiError('SERVICE_UNAVAILABLE', `The server is busy drawing other tiles (${drawing.concurrency} at a time, ${drawing.maxWaiting} waiting); retry in a moment.`, { headers: { 'retry-after': '1' } })
    }
    let drawn: { mvt: Buffer, changes: string }
    try {
      drawn = await store.tile(input)
    } finally {
      admitted()
    }
    return await sendDrawn(reply, drawn, etagOf, empty)
  }
  // The ETag of the counters read with the bytes (a write after a revalidation's read is in both).
  const sendDrawn = async (reply: FastifyReply, { mvt, changes }: { mvt: Buffer, changes: string }, etagOf: (changes: string) => string, empty: 204 | Buffer) => {
    void reply.header('etag', etagOf(changes))
    if (mvt.length > 0) return await reply.type(MVT).send(mvt)
    return empty === 204 ? await reply.code(204).send() : await reply.type(MVT).send(empty)
  }
  const tileResponses = (empty: object) => ({
    200: { description: 'The tile', content: { [MVT]: { schema: { type: 'string', format: 'binary' } } } },
    ...empty,
    304: { description: 'Not modified since the ETag in If-None-Match', type: 'null' },
    ...errorResponses(400, 401, 404, 429, 500, 503)
  })

  // The overlaps of the caller's unresolved conflicts (conflict-tiles.repository.ts). Not kept in
  // memory: the ETag hashes the bytes, which hold each conflict's state and version, so a stance
  // change or a resolution changes it.
  app.get('/collections/conflicts/tiles/WebMercatorQuad/:tileMatrix/:tileRow/:tileCol', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getConflictTile',
      summary: 'A vector tile of your unresolved conflicts (Mapbox Vector Tile, layer "conflicts")',
      description: 'The overlaps of the unresolved conflicts your organisation is a party to (admins: all), each with the attributes id, state and version. Path order as getTile. 204 when none is drawn in the tile. The ETag follows the bytes: a stance change or a resolution changes it.',
      tags: TAGS,
      security,
      params: TileParamsSchema,
      response: tileResponses({ 204: { description: 'No conflict is drawn in this tile', type: 'null' } })
    }
  }, async (request, typed) => {
    const reply: FastifyReply = typed
    const { tileMatrix: z, tileRow: y, tileCol: x } = request.params
    const tile = parseTile({ z, x, y }, { z: 'tileMatrix', x: 'tileCol', y: 'tileRow' }, 'x')
    const scope = request.account.scope
    const admitted = await admit(reply)
    if (admitted === 'cancelled') return await reply.code(499).send()
    if (admitted === 'full') {
      throw new ApiError('SERVICE_UNAVAILABLE', `The server is busy drawing other tiles (${drawing.concurrency} at a time, ${drawing.maxWaiting} waiting); retry in a moment.`, { headers: { 'retry-after': '1' } })
    }
    let mvt: Buffer
    try {
      mvt = await store.conflicts({ tile, scope, maxFeatures })
    } finally {
      admitted()
    }
    const etag = `"${createHash('sha256').update(JSON.stringify([DRAWING, scope])).update(mvt).digest('base64url').slice(0, 27)}"`
    // Revalidated every time: a stance changes no tile counter, so only the bytes tell.
    void reply.header('cache-control', 'private, no-cache').header('vary', 'Authorization').header('etag', etag)
    if (matches(request.headers['if-none-match'], etag)) return await reply.code(304).send()
    if (mvt.length === 0) return await reply.code(204).send()
    return await reply.type(MVT).send(mvt)
  })

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
      response: tileResponses({ 204: { description: 'No source is drawn in this tile', type: 'null' } })
    }
  }, async (request, reply) => {
    const { tileMatrix: z, tileRow: y, tileCol: x } = request.params
    return await sendTile(request, reply, parseTile({ z, x, y }, { z: 'tileMatrix', x: 'tileCol', y: 'tileRow' }, 'x'), 204)
  })

  // The same tiles in the order of a {z}/{x}/{y}.pbf tree, which GDAL's MVT driver reads a
  // tileset as (with the TileJSON as its METADATA_FILE). It fails on an empty body, so an empty
  // tile here is the layer without features.
  app.get('/collections/sources/tiles/WebMercatorQuad/xyz/:z/:x/:y', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getTileXyz',
      summary: 'A vector tile of the sources, z/x/y order (for GDAL\'s MVT driver)',
      description: 'The tile of getTile with the column before the row, as a {z}/{x}/{y}.pbf tree has them: zoom, column (x, from the west), row (y, from the north). A tile without sources is the layer "sources" with no feature (200), not 204. ETag and If-None-Match (304) as getTile.',
      tags: TAGS,
      security,
      params: XyzParamsSchema,
      querystring: TileQuerySchema,
      response: tileResponses({})
    }
  }, async (request, reply) => {
    const { z, x, y } = request.params
    return await sendTile(request, reply, parseTile({ z, x, y }, { z: 'z', x: 'x', y: 'y' }, 'y'), EMPTY_TILE)
  })
}

export default tilesRoutes
