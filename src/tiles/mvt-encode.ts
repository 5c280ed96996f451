// Mapbox Vector Tile 2.1 encoding of polygons already in tile units (tiles.repository.ts's
// tileFeaturesQuery), for a PostGIS without ST_AsMVT (the embedded backend's). The plain protobuf
// wire format, written by hand: one layer, string/double/bool values, POLYGON geometry with
// exterior rings of positive area (y down) and holes of negative area, as the spec has them.
import type { DrawnFeature } from './tiles.repository.js'
import { TILE_PROPERTIES } from '../sources/source-properties.js'

class Writer {
  private bytes: number[] = []
  varint (n: number): this {
    let v = n
    while (v > 0x7f) { this.bytes.push((v & 0x7f) | 0x80); v = Math.floor(v / 128) }
    this.bytes.push(v)
    return this
  }

  key (field: number, wire: number): this { return this.varint(field * 8 + wire) }
  message (field: number, inner: Writer): this {
    this.key(field, 2).varint(inner.bytes.length)
    for (const b of inner.bytes) this.bytes.push(b)
    return this
  }

  string (field: number, text: string): this {
    const utf8 = Buffer.from(text, 'utf8')
    this.key(field, 2).varint(utf8.length)
    for (const b of utf8) this.bytes.push(b)
    return this
  }

  double (field: number, value: number): this {
    const b = Buffer.alloc(8)
    b.writeDoubleLE(value)
    this.key(field, 1)
    for (const x of b) this.bytes.push(x)
    return this
  }

  packed (field: number, values: number[]): this {
    const inner = new Writer()
    for (const v of values) inner.varint(v)
    return this.message(field, inner)
  }

  buffer (): Buffer { return Buffer.from(this.bytes) }
}

type Ring = number[][]
const zigzag = (n: number): number => n >= 0 ? n * 2 : -n * 2 - 1
const area = (ring: Ring): number => {
  let sum = 0
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) sum += (ring[j]![0]! * ring[i]![1]!) - (ring[i]![0]! * ring[j]![1]!)
  return sum / 2
}

function polygonsOf (geojson: { type: string, coordinates?: unknown, geometries?: unknown[] }): Ring[][] {
  if (geojson.type === 'Polygon') return [geojson.coordinates as Ring[]]
  if (geojson.type === 'MultiPolygon') return geojson.coordinates as Ring[][]
  if (geojson.type === 'GeometryCollection') return (geojson.geometries as Array<typeof geojson>).flatMap(polygonsOf)
  return []
}

function geometry (polygons: Ring[][]): number[] {
  const out: number[] = []
  let cx = 0
  let cy = 0
  for (const rings of polygons) {
    rings.forEach((closed, r) => {
      const ring = closed.slice(0, -1)
      const a = area(ring)
      if (ring.length < 3 || a === 0) return
      if ((r === 0) !== (a > 0)) ring.reverse()
      out.push(9, zigzag(ring[0]![0]! - cx), zigzag(ring[0]![1]! - cy))
      cx = ring[0]![0]!
      cy = ring[0]![1]!
      out.push(2 | ((ring.length - 1) << 3))
      for (const [x, y] of ring.slice(1) as Array<[number, number]>) {
        out.push(zigzag(x - cx), zigzag(y - cy))
        cx = x
        cy = y
      }
      out.push(15)
    })
  }
  return out
}

/**
 * The layer "sources" with no feature: what the z/x/y alias answers for an empty tile, since
 * GDAL's MVT driver fails on a tile of zero bytes (an MVT without layers).
 */
export function emptyMvtLayer (extent: number): Buffer {
  return new Writer().message(3, new Writer().key(15, 0).varint(2).string(1, 'sources').key(5, 0).varint(extent)).buffer()
}

/** A layer's attributes: a name and its type (numbers are written as doubles). */
export type LayerProperties = ReadonlyArray<{ name: string, type: string }>

/**
 * The layer (by default "sources", with TILE_PROPERTIES and each feature's count) as MVT; empty
 * when no feature has a polygon left.
 */
export function encodeMvt (features: readonly DrawnFeature[], extent: number, name = 'sources', properties: LayerProperties = TILE_PROPERTIES): Buffer {
  const keys: string[] = []
  const keyIndex = new Map<string, number>()
  const values: Writer[] = []
  const valueIndex = new Map<string, number>()
  const tag = (key: string, value: string | number | boolean): number[] => {
    let k = keyIndex.get(key)
    if (k === undefined) { k = keys.push(key) - 1; keyIndex.set(key, k) }
    const id = `${typeof value}:${String(value)}`
    let v = valueIndex.get(id)
    if (v === undefined) {
      const w = new Writer()
      if (typeof value === 'string') w.string(1, value)
      else if (typeof value === 'boolean') w.key(7, 0).varint(value ? 1 : 0)
      else w.double(3, value)
      v = values.push(w) - 1
      valueIndex.set(id, v)
    }
    return [k, v]
  }
  const layer = new Writer().key(15, 0).varint(2).string(1, name)
  let drawn = 0
  for (const f of features) {
    const geom = geometry(polygonsOf(JSON.parse(f.geom) as { type: string }))
    if (geom.length === 0) continue
    const tags: number[] = []
    for (const p of properties) {
      const value = f[p.name]
      if (value === null || value === undefined) continue
      tags.push(...tag(p.name, p.type === 'number' || p.type === 'integer' ? Number(value) : value))
    }
    if (f.count !== undefined) tags.push(...tag('count', Number(f.count)))
    layer.message(2, new Writer().packed(2, tags).key(3, 0).varint(3).packed(4, geom))
    drawn++
  }
  if (drawn === 0) return Buffer.alloc(0)
  for (const k of keys) layer.string(3, k)
  for (const v of values) layer.message(4, v)
  layer.key(5, 0).varint(extent)
  return new Writer().message(3, layer).buffer()
}
