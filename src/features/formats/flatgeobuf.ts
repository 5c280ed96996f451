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
import { Geometry as FgbGeometry } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry.js'
import { type IParsedGeometry, buildGeometry } from 'flatgeobuf/lib/mjs/generic/geometry.js'
import { parseGC, parseGeometry } from 'flatgeobuf/lib/mjs/geojson/geometry.js'
import { generateLevelBounds } from 'flatgeobuf/lib/mjs/packedrtree.js'
import type { BinaryRows } from '../../db/copy-binary.js'
import { type Column, type ColumnKind, type OutFeature, attributeColumns, columnsOf } from './columns.js'

const MAGIC = Uint8Array.of(0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62, 0x00)
const NODE_SIZE = 16
const NODE_BYTES = 40
const OUT_CHUNK = 256 * 1024
/**
 * The bytes a file stream holds before it asks its writer to wait: with the stream's default
 * (16 KiB) every OUT_CHUNK waited for its write to finish, and the encoding with it; with room for
 * a few chunks the writes run on libuv's threads while the next features are encoded.
 */
export const FILE_BUFFER = 4 * 1024 * 1024

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

/** Features sorted by a key of their Hilbert value and index (hilbertOrder): 2^21, so that 2^32 values · 2^21 stay below 2^53. */
const KEYED_SORT_MAX = 2 ** 21

/** A non-negative integer below 2^53 as a little-endian uint64, without a BigInt. */
function writeU64 (buf: Buffer, n: number, at: number): void {
  const hi = Math.floor(n / 0x1_0000_0000)
  buf.writeUInt32LE(n - hi * 0x1_0000_0000, at)
  buf.writeUInt32LE(hi, at + 4)
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

/** Grows box ([minX, minY, maxX, maxY]) to hold the point x, y. */
function growBox (box: number[], x: number, y: number): void {
  if (x < box[0]!) box[0] = x
  if (y < box[1]!) box[1] = y
  if (x > box[2]!) box[2] = x
  if (y > box[3]!) box[3] = y
}

/** What the flatbuffers builder's createByteVector uses of it (its free space and its buffer), to copy a vector's bytes in as that does. */
interface BuilderInternals { space: number, bb: { bytes: () => Uint8Array, setPosition: (at: number) => void } }

/**
 * A Polygon or MultiPolygon's WKB (ST_AsBinary, at `at` in data) as a FlatGeobuf geometry in
 * builder b, as buildGeometry builds parsedWkb's form of it (a part's type and its ring ends only
 * when it has more than one ring), without the arrays in between; `box` grows to its extent.
 */
export function wkbGeometry (b: flatbuffers.Builder, data: Buffer, at: number, box: number[]): number {
  const polygon = (): number => {
    const little = data[at] === 1
    at += 5
    const rings = little ? data.readUInt32LE(at) : data.readUInt32BE(at)
    at += 4
    const ends: number[] = []
    let points = 0
    for (let r = 0; r < rings; r++) {
      const n = little ? data.readUInt32LE(at) : data.readUInt32BE(at)
      points += n
      ends.push(points)
      at += 4 + 16 * n
    }
    b.startVector(8, 2 * points, 8)
    let end = at
    if (little) {
      // Little-endian WKB holds each ring's coordinates as the vector holds them: copied ring
      // by ring into the space startVector made, as the builder's createByteVector copies bytes.
      const raw = b as unknown as BuilderInternals
      raw.space -= 16 * points
      raw.bb.setPosition(raw.space)
      const bytes = raw.bb.bytes()
      for (let r = rings - 1; r >= 0; r--) {
        const count = ends[r]! - (r === 0 ? 0 : ends[r - 1]!)
        const start = end - 16 * count
        data.copy(bytes, raw.space + 16 * (r === 0 ? 0 : ends[r - 1]!), start, end)
        for (let p = start; p < end; p += 16) growBox(box, data.readDoubleLE(p), data.readDoubleLE(p + 8))
        end = start - 4
      }
    } else {
      // The coordinates, last first (flatbuffers builds a vector backwards), ring by ring.
      for (let r = rings - 1; r >= 0; r--) {
        const count = ends[r]! - (r === 0 ? 0 : ends[r - 1]!)
        const start = end - 16 * count
        for (let p = end - 16; p >= start; p -= 16) {
          const x = data.readDoubleBE(p)
          const y = data.readDoubleBE(p + 8)
          growBox(box, x, y)
          b.addFloat64(y)
          b.addFloat64(x)
        }
        end = start - 4
      }
    }
    const xy = b.endVector()
    const endsVector = rings > 1 ? FgbGeometry.createEndsVector(b, ends) : 0
    FgbGeometry.startGeometry(b)
    if (endsVector !== 0) FgbGeometry.addEnds(b, endsVector)
    FgbGeometry.addXy(b, xy)
    FgbGeometry.addType(b, GeometryType.Polygon)
    return FgbGeometry.endGeometry(b)
  }
  const little = data[at] === 1
  const code = little ? data.readUInt32LE(at + 1) : data.readUInt32BE(at + 1)
  if (code === 3) return polygon()
  if (code !== 6) throw new Error(`WKB geometry type ${code}: sources hold Polygons and MultiPolygons`)
  const count = little ? data.readUInt32LE(at + 5) : data.readUInt32BE(at + 5)
  at += 9
  const parts: number[] = []
  for (let i = 0; i < count; i++) parts.push(polygon())
  const partsVector = FgbGeometry.createPartsVector(b, parts)
  FgbGeometry.startGeometry(b)
  FgbGeometry.addParts(b, partsVector)
  FgbGeometry.addType(b, GeometryType.MultiPolygon)
  return FgbGeometry.endGeometry(b)
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
    for (let i = 0; i < columns.length; i++) this.value(i, (columns[i] as Column).kind, values[i])
    return this.buf.subarray(0, this.length)
  }

  /**
   * The same for a row of binary COPY rows (db/copy-binary.ts): file column i is the row's field
   * fields[i] in the binary form of its kind's type (source-properties.ts BINARY_TYPES: text for
   * a string or JSON, timestamptz, int8, float8, bool), copied without a JavaScript value made of
   * it; or, where fields[i] is -1, values[i] (an attribute), as encode takes it.
   */
  encodeBinary (columns: readonly Column[], rows: BinaryRows, r: number, fields: Int32Array, values: readonly unknown[]): Uint8Array {
    this.length = 0
    const { data, starts, lengths } = rows
    const base = r * rows.fields
    for (let i = 0; i < columns.length; i++) {
      const f = fields[i] as number
      const kind = (columns[i] as Column).kind
      if (f === -1) {
        this.value(i, kind, values[i])
        continue
      }
      const length = lengths[base + f] as number
      if (length === -1) continue
      const at = starts[base + f] as number
      // ±infinity: to_char gives NULL, so the Feature's text leaves the property out; so here.
      if (kind === 'timestamp' && isInfinite(data, at)) continue
      // Written byte by byte: Buffer's writeUInt16LE and copy check their arguments, which cost
      // more than the few bytes they write here.
      this.room(6 + (kind === 'timestamp' ? 40 : length))
      const buf = this.buf
      let p = this.length
      buf[p++] = i & 0xFF
      buf[p++] = i >>> 8
      switch (kind) {
        case 'boolean':
          buf[p++] = data[at] === 0 ? 0 : 1
          break
        case 'integer':
        case 'number':
          // int8 and float8, big-endian, as little-endian Long and Double: the same 8 bytes reversed.
          for (let j = 7; j >= 0; j--) buf[p++] = data[at + j] as number
          break
        default: {
          const n = kind === 'timestamp' ? this.timestamp(i, buf, p + 4, data, at) : length
          buf[p++] = n & 0xFF
          buf[p++] = (n >>> 8) & 0xFF
          buf[p++] = (n >>> 16) & 0xFF
          buf[p++] = n >>> 24
          if (kind !== 'timestamp') {
            if (n > 64) data.copy(buf, p, at, at + n)
            else for (let j = 0; j < n; j++) buf[p + j] = data[at + j] as number
          }
          p += n
        }
      }
      this.length = p
    }
    return this.buf.subarray(0, this.length)
  }

  // Each column's last timestamp (its 8 bytes, as two 32-bit halves) and its text, written
  // again as it is: rows written together share created_at, updated_at and often their periods.
  private readonly lastHi: number[] = []
  private readonly lastLo: number[] = []
  private readonly lastText: Buffer[] = []
  private readonly lastLength: number[] = []

  /** Column i's timestamptz, in its binary form at data[at], as writeIsoUtc writes it, at buf[p]; returns its length. */
  private timestamp (i: number, buf: Buffer, p: number, data: Buffer, at: number): number {
    const hi = data.readInt32BE(at)
    const lo = data.readUInt32BE(at + 4)
    let text = this.lastText[i]
    if (text === undefined) this.lastText[i] = text = Buffer.alloc(40)
    if (hi !== this.lastHi[i] || lo !== this.lastLo[i]) {
      this.lastLength[i] = writeIsoUtc(text, 0, hi, lo)
      this.lastHi[i] = hi
      this.lastLo[i] = lo
    }
    const n = this.lastLength[i] as number
    for (let j = 0; j < n; j++) buf[p + j] = text[j] as number
    return n
  }

  /** Column i's value, by the column's kind; a value it cannot hold (a string in a number or boolean column) is left out. */
  private value (i: number, kind: ColumnKind, v: unknown): void {
    if (v === null || v === undefined) return
    switch (kind) {
      case 'boolean':
        if (typeof v !== 'boolean') return
        this.room(3)
        this.buf.writeUInt16LE(i, this.length)
        this.buf[this.length + 2] = v ? 1 : 0
        this.length += 3
        break
      case 'integer': {
        if (typeof v !== 'number' || !Number.isSafeInteger(v)) return
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
        if (typeof v !== 'number') return
        this.room(10)
        this.buf.writeUInt16LE(i, this.length)
        this.buf.writeDoubleLE(v, this.length + 2)
        this.length += 10
        break
      default: {
        if (kind === 'timestamp' && typeof v !== 'string') return
        // A string column holds an attribute's other values as their JSON text (widerKind:
        // columns.ts), as a JSON column holds all of them. JSON.stringify gives undefined for
        // what JSON cannot hold (a function): left out.
        const text = typeof v === 'string' && kind !== 'json' ? v : JSON.stringify(v) as string | undefined
        if (text === undefined) return
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
}

/** Whether the timestamptz at data[at] is infinity or -infinity (int64's largest and smallest). */
function isInfinite (data: Buffer, at: number): boolean {
  const hi = data.readInt32BE(at)
  const lo = data.readUInt32BE(at + 4)
  return (hi === 0x7FFFFFFF && lo === 0xFFFFFFFF) || (hi === -0x80000000 && lo === 0)
}

/** Days from 0000-03-01 to 1970-01-01 (Hinnant's civil_from_days), and from 1970-01-01 to PostgreSQL's epoch, 2000-01-01. */
const DAYS_TO_UNIX = 719_468
const PG_EPOCH_DAYS = 10_957

/** Writes n (0–99) as two digits at `at`. */
function two (buf: Buffer, at: number, n: number): void {
  const tens = (n / 10) | 0
  buf[at] = 0x30 + tens
  buf[at + 1] = 0x30 + n - 10 * tens
}

/** Writes n (≥ 0) as `width` decimal digits at least at `at`; returns the bytes written. */
function writeDigits (buf: Buffer, at: number, n: number, width: number): number {
  let digits = 1
  for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++
  if (digits < width) digits = width
  for (let i = digits - 1, m = n; i >= 0; i--, m = Math.floor(m / 10)) buf[at + i] = 0x30 + (m % 10)
  return digits
}

/**
 * A timestamptz's binary form (microseconds since 2000-01-01 UTC, as its high and low 32 bits)
 * as the API writes an instant (db/postgis.ts isoUtc: YYYY-MM-DDTHH:MM:SS, the fraction's
 * trailing zeros dropped, Z; the year as to_char's YYYY), written at `at`; returns the bytes
 * written (at most 40). Not for ±infinity (isInfinite), which to_char makes NULL.
 */
export function writeIsoUtc (buf: Buffer, at: number, hi: number, lo: number): number {
  const big = hi * 0x1_0000_0000 + lo
  // Exact while the microseconds are a safe integer; beyond, through a BigInt.
  let seconds: number
  let micros: number
  if (Math.abs(big) < Number.MAX_SAFE_INTEGER) {
    seconds = Math.floor(big / 1_000_000)
    micros = big - seconds * 1_000_000
  } else {
    const v = (BigInt(hi) << 32n) | BigInt(lo)
    const s = v / 1_000_000n - (v % 1_000_000n < 0n ? 1n : 0n)
    seconds = Number(s)
    micros = Number(v - s * 1_000_000n)
  }
  const days = Math.floor(seconds / 86_400)
  const sod = seconds - days * 86_400
  // Hinnant's civil_from_days.
  const z = days + PG_EPOCH_DAYS + DAYS_TO_UNIX
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  let p = at
  if (year >= 1 && year <= 9999) {
    two(buf, p, (year / 100) | 0)
    two(buf, p + 2, year % 100)
    p += 4
  } else {
    // As to_char's YYYY: a year after 9999 in full; one before 1 as its number BC (0 is 1 BC), unsigned.
    p += writeDigits(buf, p, year >= 1 ? year : 1 - year, 4)
  }
  const hour = (sod / 3600) | 0
  const minute = ((sod - hour * 3600) / 60) | 0
  buf[p] = 0x2D
  two(buf, p + 1, month)
  buf[p + 3] = 0x2D
  two(buf, p + 4, day)
  buf[p + 6] = 0x54
  two(buf, p + 7, hour)
  buf[p + 9] = 0x3A
  two(buf, p + 10, minute)
  buf[p + 12] = 0x3A
  two(buf, p + 13, sod - hour * 3600 - minute * 60)
  p += 15
  if (micros > 0) {
    let digits = 6
    let fraction = micros
    while (fraction % 10 === 0) { fraction /= 10; digits-- }
    buf[p++] = 0x2E
    p += writeDigits(buf, p, fraction, digits)
  }
  buf[p++] = 0x5A
  return p - at
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
    this.file = createWriteStream(join(this.dir, 'features'), { highWaterMark: FILE_BUFFER })
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
    await this.encode(f.geometry.type, parsed, undefined, (this.columns ?? []).map((c) => c.name === 'id' ? f.id : properties != null && Object.hasOwn(properties, c.name) ? properties[c.name] : null))
  }

  /**
   * The same for a Feature in parts, its geometry as WKB (a Polygon or a MultiPolygon), its
   * values in the columns' order (columnNames, after columnsFrom): no properties object a feature.
   */
  addParts (wkb: Uint8Array, values: readonly unknown[]): Promise<void> | undefined {
    const { parsed, type } = parsedWkb(wkb)
    return this.encode(type, parsed, undefined, values)
  }

  /**
   * The same for row r of binary COPY rows (db/copy-binary.ts): its geometry the WKB of field 1,
   * file column i the row's field fields[i] or, where that is -1, values[i] (PropertyBytes
   * encodeBinary). Like addParts, a promise only when the temporary file asks to wait (a
   * promise for each feature was a visible part of a large export's time: docs/performance.md).
   */
  addBinary (rows: BinaryRows, r: number, fields: Int32Array, values: readonly unknown[]): Promise<void> | undefined {
    const at = rows.starts[r * rows.fields + 1] as number
    const props = this.properties.encodeBinary(this.columns ?? [], rows, r, fields, values)
    const box = [Infinity, Infinity, -Infinity, -Infinity]
    const data = rows.data
    // The geometry built straight from the WKB, as buildGeometry builds the parsed form (the
    // same bytes), its box found on the way.
    const type = (data[at] === 1 ? data.readUInt32LE(at + 1) : data.readUInt32BE(at + 1)) === 6 ? 'MultiPolygon' : 'Polygon'
    return this.encode(type, (b) => wkbGeometry(b, data, at, box), box, props)
  }

  /** The columns' names (once columnsFrom or add has made them): id, then the properties'. */
  columnNames (): string[] {
    return (this.columns ?? []).map((c) => c.name)
  }

  /** Encodes a feature into the pending chunk; a promise when the temporary file asks to wait before the next. */
  private encode (type: string, geometryOf: IParsedGeometry | ((b: flatbuffers.Builder) => number), box: number[] | undefined, values: readonly unknown[] | Uint8Array): Promise<void> | undefined {
    // The header's geometry type is the one every feature has, or Unknown when they differ (a
    // Polygon beside a MultiPolygon): readers take a feature's own type only under Unknown, and
    // would read a MultiPolygon as the header's Polygon.
    const own = GEOMETRY_TYPE[type] ?? GeometryType.Unknown
    if (this.geometryType === undefined) this.geometryType = own
    else if (own !== this.geometryType) this.geometryType = GeometryType.Unknown
    const props = values instanceof Uint8Array ? values : this.properties.encode(this.columns ?? [], values)
    const b = this.builder
    b.clear()
    const propsOffset = props.length > 0 ? b.createByteVector(props) : 0
    const geometry = typeof geometryOf === 'function' ? geometryOf(b) : buildGeometry(b, geometryOf)
    FgbFeature.startFeature(b)
    FgbFeature.addGeometry(b, geometry)
    if (propsOffset !== 0) FgbFeature.addProperties(b, propsOffset)
    b.finishSizePrefixed(FgbFeature.endFeature(b))
    const bytes = b.asUint8Array()
    if (box === undefined) box = boxOf((geometryOf as IParsedGeometry).xy, (geometryOf as IParsedGeometry).parts)
    this.extent[0] = Math.min(this.extent[0]!, box[0]!)
    this.extent[1] = Math.min(this.extent[1]!, box[1]!)
    this.extent[2] = Math.max(this.extent[2]!, box[2]!)
    this.extent[3] = Math.max(this.extent[3]!, box[3]!)
    this.entries.push(box, this.written, bytes.length)
    this.written += bytes.length
    // The builder's bytes are its own, overwritten by the next feature: copied into the pending
    // chunk before any wait.
    const wait = this.pendingLength + bytes.length > this.pending.length ? this.flush(bytes.length) : undefined
    this.pending.set(bytes, this.pendingLength)
    this.pendingLength += bytes.length
    return wait
  }

  /** Writes the pending chunk to the temporary file and makes room for `next` bytes; a promise when the file asks to wait (drain). */
  private flush (next = 0): Promise<void> | undefined {
    const file = this.file as WriteStream
    const full = this.pendingLength > 0 && !file.write(this.pending.subarray(0, this.pendingLength))
    this.pending = Buffer.allocUnsafe(Math.max(OUT_CHUNK, next))
    this.pendingLength = 0
    return full ? once(file, 'drain').then(() => {}) : undefined
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
      writeU64(tree, offset, at + 32)
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
        writeU64(tree, first, at + 32)
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
    if (count <= KEYED_SORT_MAX) {
      // Each feature's value and index in one double (value · 2^21 + index, exact below 2^53),
      // sorted without a comparator: a tenth of the time of sorting the indexes by a comparator
      // calling back into JavaScript for each of a million features' ~20 comparisons.
      const keys = new Float64Array(count)
      for (let i = 0; i < count; i++) keys[i] = values[i]! * KEYED_SORT_MAX + i
      keys.sort()
      for (let i = 0; i < count; i++) order[i] = keys[i]! % KEYED_SORT_MAX
      return order
    }
    for (let i = 0; i < count; i++) order[i] = i
    order.sort((a, b) => values[a]! - values[b]! || a - b)
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
        // Features that follow each other in the file as in the tree's order (neighbours written
        // one after the other) are read together: a run, from runAt in the file to runOut in out.
        let runAt = 0
        let runOut = 0
        let runLength = 0
        const readRun = (): void => {
          if (runLength > 0) readSync(fd, out, runOut, runLength, runAt)
          runLength = 0
        }
        for (let i = 0; i < count; i++) {
          const k = order[i]!
          const length = lengths[k]!
          const at = offsets[k]!
          if (used + length > out.length) {
            readRun()
            if (used > 0) { yield out.subarray(0, used); out = Buffer.allocUnsafe(Math.max(OUT_CHUNK, length)); used = 0 }
            if (length > out.length) out = Buffer.allocUnsafe(length)
          }
          if (runLength > 0 && at === runAt + runLength) {
            runLength += length
          } else {
            readRun()
            runAt = at
            runOut = used
            runLength = length
          }
          used += length
        }
        readRun()
        if (used > 0) yield out.subarray(0, used)
      } finally {
        closeSync(fd)
      }
    } finally {
      await rm(this.dir as string, { recursive: true, force: true })
    }
  }
}
