// Schemas of OGC API – Tiles (Part 1) documents as this service makes them, and of TileJSON 3.0.
import { Type } from '@sinclair/typebox'
import { TILE_PROPERTIES } from '../sources/source-properties.js'

export const MVT = 'application/vnd.mapbox-vector-tile'

const LinkSchema = Type.Object({
  href: Type.String(),
  rel: Type.String(),
  type: Type.Optional(Type.String()),
  title: Type.Optional(Type.String()),
  templated: Type.Optional(Type.Boolean())
})

const param = (description: string) => Type.Optional(Type.String({ description }))
export const TileQuerySchema = Type.Object({
  datetime: param('An RFC 3339 instant, or an interval a/b, ../b, a/.. (as for items). A source is drawn when its period [start_at, end_at) intersects it.'),
  organisation: param('Admins only: the sources of one organisation.')
}, { additionalProperties: false })

export const TileParamsSchema = Type.Object({
  tileMatrix: Type.String({ description: 'Zoom, 0–22.' }),
  tileRow: Type.String({ description: 'Row from the north, 0 to 2^zoom − 1.' }),
  tileCol: Type.String({ description: 'Column from the west, 0 to 2^zoom − 1; a .pbf or .mvt suffix is allowed (GDAL\'s MVT driver wants one).' })
})

export const XyzParamsSchema = Type.Object({
  z: Type.String({ description: 'Zoom, 0–22.' }),
  x: Type.String({ description: 'Column from the west, 0 to 2^zoom − 1.' }),
  y: Type.String({ description: 'Row from the north, 0 to 2^zoom − 1; a .pbf or .mvt suffix is allowed (GDAL asks for {y}.pbf).' })
})

/** A box in CRS84, as OGC API – Tiles' boundingBox (2D-TMS 2.0's 2DBoundingBox). */
const BoundingBoxSchema = Type.Object({
  lowerLeft: Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }),
  upperRight: Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }),
  crs: Type.String()
}, { description: 'Where the caller\'s sources are: west/south and east/north in CRS84 (absent when there are none).' })

export const TileSetSchema = Type.Object({
  title: Type.String(),
  dataType: Type.Literal('vector'),
  crs: Type.String(),
  tileMatrixSetURI: Type.String(),
  boundingBox: Type.Optional(BoundingBoxSchema),
  links: Type.Array(LinkSchema),
  layers: Type.Optional(Type.Array(Type.Object({
    id: Type.String(),
    dataType: Type.Literal('vector'),
    geometryDimension: Type.Integer(),
    minTileMatrix: Type.String(),
    maxTileMatrix: Type.String(),
    propertiesSchema: Type.Object({ type: Type.Literal('object'), properties: Type.Record(Type.String(), Type.Object({ type: Type.String(), description: Type.String() })) })
  })))
})

export const TileSetsSchema = Type.Object({
  tilesets: Type.Array(Type.Omit(TileSetSchema, ['layers', 'boundingBox'])),
  links: Type.Array(LinkSchema)
})

export const TileJsonSchema = Type.Object({
  tilejson: Type.Literal('3.0.0'),
  name: Type.String(),
  tiles: Type.Array(Type.String()),
  scheme: Type.Literal('xyz'),
  minzoom: Type.Integer(),
  maxzoom: Type.Integer(),
  bounds: Type.Array(Type.Number(), { minItems: 4, maxItems: 4, description: 'West, south, east, north (CRS84) of the caller\'s sources, within ±85.0511°; the world when there are none.' }),
  vector_layers: Type.Array(Type.Object({
    id: Type.String(),
    description: Type.String(),
    minzoom: Type.Integer(),
    maxzoom: Type.Integer(),
    fields: Type.Record(Type.String(), Type.String())
  }))
})

const TileMatrixSchema = Type.Object({
  id: Type.String(),
  scaleDenominator: Type.Number(),
  cellSize: Type.Number(),
  cornerOfOrigin: Type.Literal('topLeft'),
  pointOfOrigin: Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }),
  tileWidth: Type.Integer(),
  tileHeight: Type.Integer(),
  matrixWidth: Type.Integer(),
  matrixHeight: Type.Integer()
})

/** A tile matrix set as OGC Two Dimensional Tile Matrix Set 2.0's JSON encoding has it. */
export const TileMatrixSetSchema = Type.Object({
  id: Type.String(),
  title: Type.String(),
  uri: Type.String(),
  crs: Type.String(),
  orderedAxes: Type.Array(Type.String()),
  wellKnownScaleSet: Type.String(),
  tileMatrices: Type.Array(TileMatrixSchema)
})

/** OGC API – Tiles' /tileMatrixSets: the tiling schemes the service defines. */
export const TileMatrixSetsSchema = Type.Object({
  tileMatrixSets: Type.Array(Type.Object({ id: Type.String(), title: Type.String(), uri: Type.String(), links: Type.Array(LinkSchema) })),
  links: Type.Array(LinkSchema)
})

/** How a mark standing for several small sources sums up an attribute, said after its description. */
const ON_A_MARK: Record<typeof TILE_PROPERTIES[number]['tiles'], string> = {
  single: 'Absent on a mark that stands for several small sources.',
  min: 'On a mark, the earliest.',
  max: 'On a mark, the latest.',
  sum: 'On a mark, the sum.',
  any: 'On a mark: whether any of them is.'
}

/** The attributes of each tile feature (source-properties.ts TILE_PROPERTIES, and count), with their JSON types. */
export const TILE_FIELDS: Record<string, { type: 'string' | 'number' | 'boolean', description: string }> = {
  ...Object.fromEntries(TILE_PROPERTIES.map((p) => [p.name, {
    type: p.type === 'boolean' ? 'boolean' : p.type === 'number' || p.type === 'integer' ? 'number' : 'string',
    description: `${p.description}${p.type === 'timestamp' ? ' (RFC 3339, UTC)' : ''} ${ON_A_MARK[p.tiles]}`
  }])),
  count: { type: 'number', description: 'How many sources the feature stands for: 1, or more on a mark for sources smaller than 2 pixels.' }
}
