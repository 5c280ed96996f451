// The streamed text formats of the items: GeoJSON text sequences (RFC 8142: each Feature after
// an ASCII record separator, ended by a line feed), newline-delimited GeoJSON (the same without
// the separator), and CSV (RFC 4180) with the geometry as WKT and one column per property.
import { type Column, type OutFeature, columnsOf } from './columns.js'

const RS = '\u001e'

/**
 * A chunk of Feature texts, comma-joined as PostgreSQL aggregates them (features.pager.ts), as
 * records of a sequence: each RS-prefixed (RFC 8142) or a plain line (NDJSON), and how many.
 * The texts pass through as PostgreSQL made them (what GeoJSON items send), split at the commas
 * outside every string, object and array; none holds a line break (JSON escapes them inside
 * strings, and PostgreSQL's JSON puts none between tokens). Parsing and re-serialising each
 * Feature instead cost a bulk export most of Node's time; the texts are trusted as GeoJSON items
 * trust them (sent as PostgreSQL made them, not checked again here).
 */
export function seqRecords (joined: string, rs: boolean): { text: string, count: number } {
  if (joined === '') return { text: '', count: 0 }
  const head = rs ? RS : ''
  const between = `\n${head}`
  const parts: string[] = [head]
  let start = 0
  let depth = 0
  let count = 1
  for (let i = 0; i < joined.length; i++) {
    const c = joined.charCodeAt(i)
    if (c === 0x22) { // a string: on to its closing quote, past escaped ones
      for (i++; i < joined.length; i++) {
        const d = joined.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x7b || c === 0x5b) depth++
    else if (c === 0x7d || c === 0x5d) depth--
    else if (c === 0x2c && depth === 0) {
      parts.push(joined.slice(start, i), between)
      start = i + 1
      count++
    }
  }
  parts.push(joined.slice(start), '\n')
  return { text: parts.join(''), count }
}

/** Coordinates as WKT's text: "x y" pairs, rings and parts in parentheses. */
function wktCoordinates (c: unknown): string {
  if (Array.isArray(c) && typeof c[0] === 'number') return c.join(' ')
  return `(${(c as unknown[]).map(wktCoordinates).join(', ')})`
}

/** A GeoJSON geometry as WKT (OGC 06-103r4), with JavaScript's shortest exact numbers. */
export function toWkt (g: OutFeature['geometry']): string {
  if (g === null) return ''
  const type = g.type.toUpperCase()
  if (g.type === 'GeometryCollection') return `GEOMETRYCOLLECTION (${((g as unknown as { geometries: Array<OutFeature['geometry']> }).geometries).map(toWkt).join(', ')})`
  const c = g.coordinates as unknown[]
  if (c.length === 0) return `${type} EMPTY`
  if (g.type === 'Point') return `POINT (${wktCoordinates(c)})`
  if (g.type === 'MultiPoint') return `MULTIPOINT (${c.map(wktCoordinates).join(', ')})`
  return `${type} ${wktCoordinates(c)}`
}

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
function csvField (v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v
}

function csvValue (v: unknown): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'string') return csvField(v)
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return csvField(JSON.stringify(v))
}

/** CSV's header line and, per Feature, its row: WKT, id, then the columns. */
export class CsvWriter {
  private columns?: Column[]

  /**
   * The header line, from the first chunk's Features and the attributes known before them
   * (columnsOf; the registry's when there are none). A later chunk cannot add a column: a page
   * read in several chunks, and the CLI's export, read every attribute's types first
   * (formats.ts formattedItems, bulk.ts).
   */
  header (features: readonly OutFeature[], attributes?: readonly Column[]): string {
    this.columns = columnsOf(features, attributes)
    return `WKT,id${this.columns.map((c) => `,${csvField(c.name)}`).join('')}\r\n`
  }

  row (f: OutFeature): string {
    const columns = this.columns ?? []
    let line = `${csvField(toWkt(f.geometry))},${csvValue(f.id)}`
    // Own members only, as FlatGeobuf's (an attribute may be named toString).
    const properties = f.properties
    for (const c of columns) line += `,${csvValue(properties != null && Object.hasOwn(properties, c.name) ? properties[c.name] : null)}`
    return `${line}\r\n`
  }
}
