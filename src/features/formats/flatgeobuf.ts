// FlatGeobuf with its spatial index (the packed Hilbert R-tree), written with the flatgeobuf
// package's own tables (the header, column, CRS, feature and geometry tables), its geometry
// builder and its level bounds; a feature's properties are encoded here, into one buffer, and
// every feature with one flatbuffers builder (the package's buildFeature makes both anew for
// each). Its JS writer (serialize) writes no index, so the tree is built here as the
// format's reference writers build it (flatbush's Hilbert sort): the features are encoded one
// by one to a temporary file, keeping only their box, offset and length (48 bytes each); at the
// end the boxes are sorted along the Hilbert curve, the tree is made bottom up, and the file is
// read back in that order behind the header and the tree.
import { closeSync, createWriteStream, openSync, readSync, type WriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import * as flatbuffers from 'flatbuffers'
import { Column as FgbColumn } from 'flatgeobuf/lib/mjs/flat-geobuf/column.js'
import { ColumnType } from 'flatgeobuf/lib/mjs/flat-geobuf/column-type.js'
import { Crs } from 'flatgeobuf/lib/mjs/flat-geobuf/crs.js'
import { GeometryType } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry-type.js'
import { Header } from 'flatgeobuf/lib/mjs/flat-geobuf/header.js'
import { Feature as FgbFeature } from 'flatgeobuf/lib/mjs/flat-geobuf/feature.js'
import { type IParsedGeometry, buildGeometry } from 'flatgeobuf/lib/mjs/generic/geometry.js'
import { parseGC, parseGeometry } from 'flatgeobuf/lib/mjs/geojson/geometry.js'
import { generateLevelBounds } from 'flatgeobuf/lib/mjs/packedrtree.js'
import { type Column, type ColumnKind, type OutFeature, attributeColumns, columnsOf } from './columns.js'

const MAGIC = Uint8Array.of(0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62, 0x00)
const NODE_SIZE = 16
const NODE_BYTES = 40
const OUT_CHUNK = 256 * 1024

const COLUMN_TYPE: Record<ColumnKind, ColumnType> = {
  string: ColumnType.String,
  timestamp: ColumnType.DateTime,
  integer: ColumnType.Long,
  number: ColumnType.Double,
  boolean: ColumnType.Bool,
  json: ColumnType.Json
}

const GEOMETRY_TYPE: Record<string, GeometryType> = {
  Point: GeometryType.Point,
  LineString: GeometryType.LineString,
  Polygon: GeometryType.Polygon,
  MultiPoint: GeometryType.MultiPoint,
  MultiLineString: GeometryType.MultiLineString,
  MultiPolygon: GeometryType.MultiPolygon,
  GeometryCollection: GeometryType.GeometryCollection
}

/** Growable typed arrays of the features' boxes, offsets and lengths. */
class Entries {
  boxes = new Float64Array(4 * 1024)
  offsets = new Float64Array(1024)
  lengths = new Uint32Array(1024)
  count = 0

  push (box: readonly number[], offset: number, length: number): void {
    if (this.count === this.offsets.length) {
      const grow = <T extends Float64Array | Uint32Array>(a: T, n: number): T => { const b = new (a.constructor as new (n: number) => T)(n); b.set(a); return b }
      this.boxes = grow(this.boxes, this.boxes.length * 2)
      this.offsets = grow(this.offsets, this.offsets.length * 2)
      this.lengths = grow(this.lengths, this.lengths.length * 2)
    }
    this.boxes.set(box, 4 * this.count)
    this.offsets[this.count] = offset
    this.lengths[this.count] = length
    this.count++
  }
}

/** The point's index along the Hilbert curve of order 16 (flatbush's hilbert, as FlatGeobuf's writers use). */
function hilbert (x: number, y: number): number {
  let a = x ^ y
  let b = 0xFFFF ^ a
  let c = 0xFFFF ^ (x | y)
  let d = x & (y ^ 0xFFFF)
  let A = a | (b >> 1)
  let B = (a >> 1) ^ a
  let C = ((c >> 1) ^ (b & (d >> 1))) ^ c
  let D = ((a & (c >> 1)) ^ (d >> 1)) ^ d
  a = A; b = B; c = C; d = D
  A = ((a & (a >> 2)) ^ (b & (b >> 2)))
  B = ((a & (b >> 2)) ^ (b & ((a ^ b) >> 2)))
  C ^= ((a & (c >> 2)) ^ (b & (d >> 2)))
  D ^= ((b & (c >> 2)) ^ ((a ^ b) & (d >> 2)))
  a = A; b = B; c = C; d = D
  A = ((a & (a >> 4)) ^ (b & (b >> 4)))
  B = ((a & (b >> 4)) ^ (b & ((a ^ b) >> 4)))
  C ^= ((a & (c >> 4)) ^ (b & (d >> 4)))
  D ^= ((b & (c >> 4)) ^ ((a ^ b) & (d >> 4)))
  a = A; b = B; c = C; d = D
  C ^= ((a & (c >> 8)) ^ (b & (d >> 8)))
  D ^= ((b & (c >> 8)) ^ ((a ^ b) & (d >> 8)))
  a = C ^ (C >> 1)
  b = D ^ (D >> 1)
  let i0 = x ^ y
  let i1 = b | (0xFFFF ^ (i0 | a))
  i0 = (i0 | (i0 << 8)) & 0x00FF00FF
  i0 = (i0 | (i0 << 4)) & 0x0F0F0F0F
  i0 = (i0 | (i0 << 2)) & 0x33333333
  i0 = (i0 | (i0 << 1)) & 0x55555555
  i1 = (i1 | (i1 << 8)) & 0x00FF00FF
  i1 = (i1 | (i1 << 4)) & 0x0F0F0F0F
  i1 = (i1 | (i1 << 2)) & 0x33333333
  i1 = (i1 | (i1 << 1)) & 0x55555555
  return ((i1 << 1) | i0) >>> 0
}

function boxOf (xy: readonly number[], parts: readonly IParsedGeometry[] | undefined): number[] {
  const box = [Infinity, Infinity, -Infinity, -Infinity]
  const add = (coords: readonly number[]): void => {
    for (let i = 0; i < coords.length; i += 2) {
      const x = coords[i] as number
      const y = coords[i + 1] as number
      if (x < box[0]!) box[0] = x
      if (y < box[1]!) box[1] = y
      if (x > box[2]!) box[2] = x
      if (y > box[3]!) box[3] = y
    }
  }
  add(xy)
  for (const p of parts ?? []) add(p.xy)
  return box
}

/**
 * A Polygon or MultiPolygon (what sources hold) from its WKB (ST_AsBinary), in the flatgeobuf
 * package's parsed form, read straight into the coordinate array: wkx would make an object of
 * every vertex, for a geometry that is copied into the file at once.
 */
export function parsedWkb (wkb: Uint8Array): { parsed: IParsedGeometry, type: string } {
  const view = new DataView(wkb.buffer, wkb.byteOffset, wkb.byteLength)
  let at = 0
  const polygon = (): IParsedGeometry => {
    const little = view.getUint8(at) === 1
    const code = view.getUint32(at + 1, little)
    if (code !== 3) throw new Error(`WKB geometry type ${code} where a Polygon was expected`)
    at += 5
    const rings = view.getUint32(at, little)
    at += 4
    const xy: number[] = []
    const ends: number[] = []
    for (let r = 0; r < rings; r++) {
      const points = view.getUint32(at, little)
      at += 4
      for (let i = 0; i < 2 * points; i++, at += 8) xy.push(view.getFloat64(at, little))
      ends.push(xy.length / 2)
    }
    // As the package's own parseGeometry: the ring ends only when there is more than one ring.
    return { xy, ends: rings > 1 ? ends : undefined, type: GeometryType.Polygon } as IParsedGeometry
  }
  const little = view.getUint8(0) === 1
  const code = view.getUint32(1, little)
  if (code === 3) return { parsed: polygon(), type: 'Polygon' }
  if (code !== 6) throw new Error(`WKB geometry type ${code}: sources hold Polygons and MultiPolygons`)
  const count = view.getUint32(5, little)
  at = 9
  const parts: IParsedGeometry[] = []
  for (let i = 0; i < count; i++) parts.push(polygon())
  return { parsed: { xy: [], parts, type: GeometryType.MultiPolygon } as unknown as IParsedGeometry, type: 'MultiPolygon' }
}

/** A feature's properties in FlatGeobuf's encoding (column index, then value), written into one buffer that grows as needed. */
class PropertyBytes {
  private buf = Buffer.allocUnsafe(1024)
  length = 0

  private room (n: number): void {
    if (this.length + n <= this.buf.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n))
    this.buf.copy(grown, 0, 0, this.length)
    this.buf = grown
  }

  /**
   * The bytes of the feature's properties (`values` in the columns' order), by the columns'
   * kinds; a value a column cannot hold (a string in a number or boolean column) is left out.
   */
  encode (columns: readonly Column[], values: readonly unknown[]): Uint8Array {
    this.length = 0
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i] as Column
      const v = values[i]
      if (v === null || v === undefined) continue
      switch (c.kind) {
        case 'boolean':
          if (typeof v !== 'boolean') continue
          this.room(3)
          this.buf.writeUInt16LE(i, this.length)
          this.buf[this.length + 2] = v ? 1 : 0
          this.length += 3
          break
        case 'integer': {
          if (typeof v !== 'number' || !Number.isSafeInteger(v)) continue
          // Long, as two 32-bit halves, without making a BigInt of each value.
          const hi = Math.floor(v / 0x1_0000_0000)
          this.room(10)
          this.buf.writeUInt16LE(i, this.length)
          this.buf.writeUInt32LE(v - hi * 0x1_0000_0000, this.length + 2)
          this.buf.writeInt32LE(hi, this.length + 6)
          this.length += 10
          break
        }
        case 'number':
          if (typeof v !== 'number') continue
          this.room(10)
          this.buf.writeUInt16LE(i, this.length)
          this.buf.writeDoubleLE(v, this.length + 2)
          this.length += 10
          break
        default: {
          if (c.kind === 'timestamp' && typeof v !== 'string') continue
          // A string column holds an attribute's other values as their JSON text (widerKind:
          // columns.ts), as a JSON column holds all of them. JSON.stringify gives undefined for
          // what JSON cannot hold (a function): left out.
          const text = typeof v === 'string' && c.kind !== 'json' ? v : JSON.stringify(v) as string | undefined
          if (text === undefined) continue
          this.room(6 + 3 * text.length)
          this.buf.writeUInt16LE(i, this.length)
          // utf8Write: what buf.write(text, at, 'utf8') calls after checking its arguments, which
          // took as long as the copy (protobufjs calls it so for the same reason).
          const n = (this.buf as Buffer & { utf8Write: (text: string, at: number) => number }).utf8Write(text, this.length + 6)
          this.buf.writeUInt32LE(n, this.length + 2)
          this.length += 6 + n
        }
      }
    }
    return this.buf.subarray(0, this.length)
  }
}

/** A FlatGeobuf file with its index, made from Features added one by one (add, or addParts), then read out (finish). */
export class FlatGeobufWriter {
  private columns?: Column[]
  private geometryType?: GeometryType
  private readonly entries = new Entries()
  private readonly extent = [Infinity, Infinity, -Infinity, -Infinity]
  private dir?: string
  private file?: WriteStream
  private written = 0
  // One builder and one properties buffer for every feature (the package's buildFeature makes
  // new ones each time), and the encoded features gathered into OUT_CHUNK-sized writes.
  private readonly builder = new flatbuffers.Builder(1024)
  private readonly properties = new PropertyBytes()
  private pending = Buffer.allocUnsafe(OUT_CHUNK)
  private pendingLength = 0

  /** `srid`: the EPSG code in the header; the coordinates are x (east), y (north), as GDAL reads FlatGeobuf. */
  constructor (private readonly srid = 4326) {}

  private async start (features: readonly OutFeature[], attributes?: readonly Column[]): Promise<void> {
    // The Feature's id as the first column: FlatGeobuf's own feature ids are row numbers.
    this.columns = [{ name: 'id', kind: typeof features[0]?.id === 'number' ? 'integer' : 'string' }, ...columnsOf(features, attributes).filter((c) => c.name !== 'id')]
    this.dir = await mkdtemp(join(tmpdir(), 'fgb-'))
    this.file = createWriteStream(join(this.dir, 'features'))
  }

  /**
   * The columns, from Features like these and the attributes known before them (columnsOf),
   * before the first Feature is added; after,
   * a column for each attribute that none of the Features before held (attributeColumns). Its
   * header is written last, so a column may come at any time; a value of a kind its column
   * cannot hold (a later string where every value before was a number) is left out.
   */
  async columnsFrom (features: readonly OutFeature[], attributes?: readonly Column[]): Promise<void> {
    if (this.columns === undefined) return await this.start(features, attributes)
    this.columns.push(...attributeColumns(features, new Set(this.columns.map((c) => c.name))))
  }

  /** Encodes one Feature to the temporary file. Features without a geometry are left out (the index needs a box). */
  async add (f: OutFeature): Promise<void> {
    if (this.columns === undefined) await this.start([f])
    if (f.geometry === null) return
    const parsed = f.geometry.type === 'GeometryCollection'
      ? parseGC(f.geometry as unknown as Parameters<typeof parseGC>[0])
      : parseGeometry(f.geometry as Parameters<typeof parseGeometry>[0])
    // Own members only: an attribute may be named toString or __proto__, and a Feature without
    // it must not hand the column Object.prototype's.
    const properties = f.properties
    await this.encode(f.geometry.type, parsed, (this.columns ?? []).map((c) => c.name === 'id' ? f.id : properties != null && Object.hasOwn(properties, c.name) ? properties[c.name] : null))
  }

  /**
   * The same for a Feature in parts, its geometry as WKB (a Polygon or a MultiPolygon), its
   * values in the columns' order (columnNames, after columnsFrom): no properties object a feature.
   */
  async addParts (wkb: Uint8Array, values: readonly unknown[]): Promise<void> {
    const { parsed, type } = parsedWkb(wkb)
    await this.encode(type, parsed, values)
  }

  /** The columns' names (once columnsFrom or add has made them): id, then the properties'. */
  columnNames (): string[] {
    return (this.columns ?? []).map((c) => c.name)
  }

  private async encode (type: string, parsed: IParsedGeometry, values: readonly unknown[]): Promise<void> {
    // The header's geometry type is the one every feature has, or Unknown when they differ (a
    // Polygon beside a MultiPolygon): readers take a feature's own type only under Unknown, and
    // would read a MultiPolygon as the header's Polygon.
    const own = GEOMETRY_TYPE[type] ?? GeometryType.Unknown
    if (this.geometryType === undefined) this.geometryType = own
    else if (own !== this.geometryType) this.geometryType = GeometryType.Unknown
    const props = this.properties.encode(this.columns ?? [], values)
    const b = this.builder
    b.clear()
    const propsOffset = props.length > 0 ? b.createByteVector(props) : 0
    const geometry = buildGeometry(b, parsed)
    FgbFeature.startFeature(b)
    FgbFeature.addGeometry(b, geometry)
    if (propsOffset !== 0) FgbFeature.addProperties(b, propsOffset)
    b.finishSizePrefixed(FgbFeature.endFeature(b))
    const bytes = b.asUint8Array()
    const box = boxOf(parsed.xy, parsed.parts)
    this.extent[0] = Math.min(this.extent[0]!, box[0]!)
    this.extent[1] = Math.min(this.extent[1]!, box[1]!)
    this.extent[2] = Math.max(this.extent[2]!, box[2]!)
    this.extent[3] = Math.max(this.extent[3]!, box[3]!)
    this.entries.push(box, this.written, bytes.length)
    this.written += bytes.length
    // The builder's bytes are its own, overwritten by the next feature: copied into the pending chunk.
    if (this.pendingLength + bytes.length > this.pending.length) await this.flush(bytes.length)
    this.pending.set(bytes, this.pendingLength)
    this.pendingLength += bytes.length
  }

  /** Writes the pending chunk to the temporary file, and makes room for `next` bytes. */
  private async flush (next = 0): Promise<void> {
    const file = this.file as WriteStream
    if (this.pendingLength > 0 && !file.write(this.pending.subarray(0, this.pendingLength))) await once(file, 'drain')
    this.pending = Buffer.allocUnsafe(Math.max(OUT_CHUNK, next))
    this.pendingLength = 0
  }

  /** Removes the temporary file when the Features will not be read out (an error while adding). */
  async abort (): Promise<void> {
    this.file?.destroy()
    if (this.dir !== undefined) await rm(this.dir, { recursive: true, force: true })
  }

  private header (count: number): Uint8Array {
    const b = new flatbuffers.Builder(1024)
    const columns = (this.columns ?? []).map((c) => {
      const name = b.createString(c.name)
      FgbColumn.startColumn(b)
      FgbColumn.addName(b, name)
      FgbColumn.addType(b, COLUMN_TYPE[c.kind])
      FgbColumn.addNullable(b, true)
      return FgbColumn.endColumn(b)
    })
    const columnsVector = columns.length > 0 ? Header.createColumnsVector(b, columns) : 0
    const envelope = count > 0 ? Header.createEnvelopeVector(b, this.extent) : 0
    const name = b.createString('sources')
    const org = b.createString('EPSG')
    Crs.startCrs(b)
    Crs.addOrg(b, org)
    Crs.addCode(b, this.srid)
    const crs = Crs.endCrs(b)
    Header.startHeader(b)
    Header.addName(b, name)
    if (envelope !== 0) Header.addEnvelope(b, envelope)
    Header.addGeometryType(b, this.geometryType ?? GeometryType.Unknown)
    if (columnsVector !== 0) Header.addColumns(b, columnsVector)
    Header.addFeaturesCount(b, BigInt(count))
    Header.addIndexNodeSize(b, count > 0 ? NODE_SIZE : 0)
    Header.addCrs(b, crs)
    b.finishSizePrefixed(Header.endHeader(b))
    return b.asUint8Array()
  }

  /**
   * The features' order along the Hilbert curve and the tree over them, root first: each node
   * the box of up to NODE_SIZE children and the index of its first child; each leaf a feature's
   * box and its byte offset in the features section (in the new order).
   */
  private tree (order: Uint32Array): Buffer {
    const { boxes, lengths, count } = this.entries
    const levels = generateLevelBounds(count, NODE_SIZE)
    const nodes = levels[0]![1]
    const tree = Buffer.alloc(nodes * NODE_BYTES)
    const leafStart = levels[0]![0]
    let offset = 0
    for (let i = 0; i < count; i++) {
      const k = order[i]!
      const at = (leafStart + i) * NODE_BYTES
      for (let j = 0; j < 4; j++) tree.writeDoubleLE(boxes[4 * k + j]!, at + 8 * j)
      tree.writeBigUInt64LE(BigInt(offset), at + 32)
      offset += lengths[k]!
    }
    for (let l = 0; l < levels.length - 1; l++) {
      const end = levels[l]![1]
      let pos = levels[l]![0]
      let parent = levels[l + 1]![0]
      while (pos < end) {
        const at = parent * NODE_BYTES
        const box = [Infinity, Infinity, -Infinity, -Infinity]
        const first = pos
        for (let j = 0; j < NODE_SIZE && pos < end; j++, pos++) {
          const c = pos * NODE_BYTES
          box[0] = Math.min(box[0]!, tree.readDoubleLE(c))
          box[1] = Math.min(box[1]!, tree.readDoubleLE(c + 8))
          box[2] = Math.max(box[2]!, tree.readDoubleLE(c + 16))
          box[3] = Math.max(box[3]!, tree.readDoubleLE(c + 24))
        }
        for (let j = 0; j < 4; j++) tree.writeDoubleLE(box[j]!, at + 8 * j)
        tree.writeBigUInt64LE(BigInt(first), at + 32)
        parent++
      }
    }
    return tree
  }

  private hilbertOrder (): Uint32Array {
    const { boxes, count } = this.entries
    const [minX, minY, maxX, maxY] = this.extent as [number, number, number, number]
    const w = maxX - minX
    const h = maxY - minY
    const values = new Uint32Array(count)
    for (let i = 0; i < count; i++) {
      const x = w > 0 ? Math.floor(0xFFFF * ((boxes[4 * i]! + boxes[4 * i + 2]!) / 2 - minX) / w) : 0
      const y = h > 0 ? Math.floor(0xFFFF * ((boxes[4 * i + 1]! + boxes[4 * i + 3]!) / 2 - minY) / h) : 0
      values[i] = hilbert(x, y)
    }
    const order = new Uint32Array(count)
    for (let i = 0; i < count; i++) order[i] = i
    order.sort((a, b) => values[a]! - values[b]!)
    return order
  }

  /** The file's bytes, in chunks; the temporary file is removed when they have been read (or the reading stops). */
  async * finish (): AsyncGenerator<Uint8Array> {
    if (this.columns === undefined) await this.start([])
    const count = this.entries.count
    try {
      // The last chunk written and the file closed inside the try: a write that fails (a full
      // disk) still removes the temporary directory.
      await this.flush()
      const file = this.file as WriteStream
      file.end()
      await once(file, 'close')
      yield MAGIC
      yield this.header(count)
      if (count === 0) return
      const order = this.hilbertOrder()
      yield this.tree(order)
      // Read back with positioned reads made synchronously, a chunk's worth between two yields:
      // a promise through libuv's pool for each feature was most of a large export's time
      // (docs/performance.md, "Figures behind the code"); the event loop still gets a turn at
      // each chunk.
      const fd = openSync(join(this.dir as string, 'features'), 'r')
      try {
        const { offsets, lengths } = this.entries
        let out = Buffer.allocUnsafe(OUT_CHUNK)
        let used = 0
        for (let i = 0; i < count; i++) {
          const k = order[i]!
          const length = lengths[k]!
          if (used + length > out.length) {
            if (used > 0) { yield out.subarray(0, used); out = Buffer.allocUnsafe(Math.max(OUT_CHUNK, length)); used = 0 }
            if (length > out.length) out = Buffer.allocUnsafe(length)
          }
          readSync(fd, out, used, length, offsets[k]!)
          used += length
        }
        if (used > 0) yield out.subarray(0, used)
      } finally {
        closeSync(fd)
      }
    } finally {
      await rm(this.dir as string, { recursive: true, force: true })
    }
  }
}
