// The formats of the items, each with its f= names and media type, and a page of items in one
// of them: GeoJSON is features.pager.ts's own; the others are made from the same Feature texts,
// one chunk (one query) at a time, so they stream and page as GeoJSON does: the sequences pass
// the texts through, CSV and FlatGeobuf parse them. The CLI's FlatGeobuf export reads each
// Feature in parts instead (flatGeobufOfRows), neither made as text nor parsed. A streamed text
// page cannot know its next link before its headers are sent, so the next link (a Link header)
// comes with pages of at most one query and with FlatGeobuf (made whole before sending).
import { Readable } from 'node:stream'
import { type ItemsPage, type PageSummary, featureChunks, nextLink, streamed } from '../features.pager.js'
import type { FeatureRow } from '../../sources/sources.listing.js'
import { type FeatureColumn, type FeatureOutput, featureColumnList, featurePropertiesOf, featureValuesOf } from '../../sources/source-properties.js'
import type { BinaryRows } from '../../db/copy-binary.js'
import { type Column, type OutFeature, columnsOfTypes } from './columns.js'
import { FlatGeobufWriter } from './flatgeobuf.js'
import { CsvWriter, seqRecords } from './text-formats.js'

export { ITEM_FORMATS, FORMAT_NAMES, type FormatKey, formatByKey, formatByName } from './format-names.js'

/** A page's chunks of comma-joined Feature texts (featureChunks); the summary goes to `done`. */
async function * chunksOf (input: ItemsPage, done: (s: PageSummary) => void): AsyncGenerator<string> {
  const chunks = featureChunks(input)
  let r = await chunks.next()
  while (r.done !== true) {
    yield r.value
    r = await chunks.next()
  }
  done(r.value)
}

/** A chunk of comma-joined Feature texts, parsed. */
const parseChunk = (chunk: string): OutFeature[] => JSON.parse(`[${chunk}]`) as OutFeature[]

async function * parsed (chunks: AsyncIterable<string>, counted?: (n: number) => void): AsyncGenerator<OutFeature[]> {
  for await (const chunk of chunks) {
    const batch = parseChunk(chunk)
    counted?.(batch.length)
    yield batch
  }
}

/**
 * FlatGeobuf and CSV's WKT hold x (east), y (north) in any CRS, the order GDAL reads them in
 * (OAMS_TRADITIONAL_GIS_ORDER); the GeoJSON formats keep the CRS's own axis order (Part 2).
 */
export function fileAxes (input: ItemsPage, key: string): ItemsPage {
  const crs = input.parsed.output.crs
  if ((key !== 'fgb' && key !== 'csv') || crs?.northFirst !== true) return input
  return { ...input, parsed: { ...input.parsed, output: { ...input.parsed.output, crs: { ...crs, northFirst: false } } } }
}

/**
 * A text format's lines, as one string per chunk of Feature texts; `counted` hears how many
 * Features each chunk held.
 */
async function * textLines (key: 'geojsonseq' | 'ndjson' | 'csv', source: AsyncIterable<string>, counted?: (n: number) => void, attributes?: readonly Column[]): AsyncGenerator<string> {
  if (key !== 'csv') {
    for await (const chunk of source) {
      const { text, count } = seqRecords(chunk, key === 'geojsonseq')
      counted?.(count)
      yield text
    }
    return
  }
  const csv = new CsvWriter()
  let first = true
  for await (const chunk of source) {
    const batch = parseChunk(chunk)
    counted?.(batch.length)
    let text = ''
    if (first) text += csv.header(batch, attributes)
    first = false
    for (const f of batch) text += csv.row(f)
    yield text
  }
  if (first) yield csv.header([], attributes)
}

/** A FlatGeobuf file of Features, written (to a temporary file) before its first byte is read. */
export async function flatGeobuf (source: AsyncIterable<OutFeature[]>, srid = 4326, attributes?: readonly Column[]): Promise<AsyncGenerator<Uint8Array>> {
  const writer = new FlatGeobufWriter(srid)
  return await fileOf(writer, async () => {
    for await (const batch of source) {
      await writer.columnsFrom(batch, attributes)
      for (const f of batch) await writer.add(f)
    }
    // An empty page's columns (a page with Features has them already: this adds none).
    await writer.columnsFrom([], attributes)
  })
}

/**
 * The file's columns for a bulk export's chunks of rows, made from the first chunk's Features
 * (update's propertiesOf: a row's properties, of which only the names and the attributes' values
 * count) and again for each attribute a later chunk brings (rowAttributes); `from` says where
 * each comes from in a row: its id (-1), a returned property's position among `columns`
 * (featureColumnList), or an attribute (-2).
 */
class ExportColumns {
  names: string[] = []
  from: number[] = []
  private readonly known = new Set<string>()

  // attributes: known before the rows (columnsOfTypes), or coming while the first are read.
  constructor (private readonly writer: FlatGeobufWriter, private readonly columns: readonly FeatureColumn[], private readonly attributes?: readonly Column[] | Promise<readonly Column[] | undefined>) {}

  /** Brings the columns up to a chunk's; true when they changed. */
  async update (count: number, propertiesOf: (r: number) => Record<string, unknown>, rowAttributes: ReadonlyArray<Record<string, unknown> | undefined>): Promise<boolean> {
    const first = this.names.length === 0
    if (!first && !rowAttributes.some((a) => a !== undefined && Object.keys(a).some((name) => !this.known.has(name)))) return false
    const features: OutFeature[] = []
    for (let r = 0; r < count; r++) features.push({ type: 'Feature', geometry: null, properties: first ? propertiesOf(r) : rowAttributes[r] ?? null })
    await this.writer.columnsFrom(features, await this.attributes)
    this.names = this.writer.columnNames()
    for (const name of this.names) this.known.add(name)
    this.from = this.names.map((name) => {
      const at = this.columns.findIndex((c) => c.name === name)
      return name === 'id' ? -1 : at === -1 ? -2 : at
    })
    return true
  }

  /** The columns of an export without rows. */
  async none (): Promise<void> {
    if (this.names.length === 0) await this.writer.columnsFrom([], await this.attributes)
  }
}

/** The writer's file once `fill` has added its Features; the temporary file removed when filling fails. */
async function fileOf (writer: FlatGeobufWriter, fill: () => Promise<void>): Promise<AsyncGenerator<Uint8Array>> {
  try {
    await fill()
  } catch (e) {
    await writer.abort()
    throw e
  }
  return writer.finish()
}

/** A row's attributes from their JSON text (featureColumns' attributes_json; null: none). */
const attributesOf = (json: unknown): Record<string, unknown> | undefined => typeof json === 'string' ? JSON.parse(json) as Record<string, unknown> : undefined

/**
 * FlatGeobuf for a bulk export's rows, each Feature in parts (features.pager.ts featureRowChunks):
 * the same features as from their texts, without PostgreSQL making the texts and Node parsing
 * them (docs/performance.md). `counted` as textLines'; `attributes`, the attribute columns known
 * before the rows (columnsOfTypes), may still be coming: awaited before the first row is written.
 */
export async function flatGeobufOfRows (chunks: AsyncIterable<FeatureRow[]>, output: FeatureOutput, counted?: (n: number) => void, attributes?: readonly Column[] | Promise<readonly Column[] | undefined>): Promise<AsyncGenerator<Uint8Array>> {
  const writer = new FlatGeobufWriter(output.crs?.srid)
  const columns = featureColumnList(output)
  const file = new ExportColumns(writer, columns, attributes)
  const rowValues: unknown[] = []
  const fileValues: unknown[] = []
  return await fileOf(writer, async () => {
    for await (const rows of chunks) {
      counted?.(rows.length)
      const rowAttributes = rows.map((row) => attributesOf(row.attributes_json))
      await file.update(rows.length, (r) => featurePropertiesOf(rows[r] as FeatureRow, columns), rowAttributes)
      const { from, names } = file
      for (const [r, row] of rows.entries()) {
        const values = featureValuesOf(row, columns, rowValues)
        const a = rowAttributes[r]
        for (let i = 0; i < from.length; i++) {
          const at = from[i] as number
          const name = names[i] as string
          fileValues[i] = at === -1 ? row.id : at >= 0 ? values[at] : a !== undefined && Object.hasOwn(a, name) ? a[name] : null
        }
        // Both arrays are used again for the next row: addParts has encoded the values before it returns.
        const wait = writer.addParts(row.geometry_wkb, fileValues)
        if (wait !== undefined) await wait
      }
    }
    await file.none()
  })
}

/**
 * The same from binary COPY rows (features.pager.ts featureBinaryChunks, on the server backend):
 * each value copied from PostgreSQL's bytes into the file (FlatGeobufWriter addBinary), the
 * attributes alone parsed; the same file as flatGeobufOfRows' (a test compares them).
 */
export async function flatGeobufOfBinaryRows (chunks: AsyncIterable<BinaryRows>, output: FeatureOutput, counted?: (n: number) => void, attributes?: readonly Column[] | Promise<readonly Column[] | undefined>): Promise<AsyncGenerator<Uint8Array>> {
  const writer = new FlatGeobufWriter(output.crs?.srid)
  const columns = featureColumnList(output)
  const file = new ExportColumns(writer, columns, attributes)
  // The attributes' field: after the id, the WKB and the returned properties (featureColumns).
  const attributesField = 2 + columns.length
  const empty = Object.fromEntries(columns.map((c) => [c.name, null]))
  let fields = new Int32Array(0)
  const fileValues: unknown[] = []
  return await fileOf(writer, async () => {
    for await (const rows of chunks) {
      counted?.(rows.count)
      const { data, starts, lengths } = rows
      const rowAttributes: Array<Record<string, unknown> | undefined> = []
      for (let r = 0; r < rows.count; r++) {
        const f = r * rows.fields + attributesField
        const length = lengths[f] as number
        rowAttributes.push(length === -1 ? undefined : attributesOf(data.toString('utf8', starts[f], (starts[f] as number) + length)))
      }
      // Only the properties' names matter to columnsOf (their kinds are the registry's); the attributes' values too.
      if (await file.update(rows.count, (r) => rowAttributes[r] === undefined ? empty : { ...empty, ...rowAttributes[r] }, rowAttributes)) {
        fields = Int32Array.from(file.from, (at) => at === -1 ? 0 : at >= 0 ? at + 2 : -1)
      }
      const { from, names } = file
      for (let r = 0; r < rows.count; r++) {
        const a = rowAttributes[r]
        for (let i = 0; i < from.length; i++) {
          if (from[i] !== -2) continue
          const name = names[i] as string
          fileValues[i] = a !== undefined && Object.hasOwn(a, name) ? a[name] : null
        }
        // fileValues is used again for the next row: addBinary has encoded it before it returns.
        const wait = writer.addBinary(rows, r, fields, fileValues)
        if (wait !== undefined) await wait
      }
    }
    await file.none()
  })
}

/** The lines of a text format for chunks of Feature texts from anywhere (the CLI's export). */
export const formatLines = textLines

/** One page of items in a format other than GeoJSON and HTML, with its next link when known. */
export async function formattedItems (input: ItemsPage, key: 'geojsonseq' | 'ndjson' | 'csv' | 'fgb'): Promise<{ body: Buffer | Readable, next?: URL }> {
  let summary: PageSummary | undefined
  const page = fileAxes(input, key)
  // A page read in several queries gets its columns from the types of all of its attributes,
  // read first; a page of one query, from its Features themselves (columnsOf).
  const { scope, parsed: { filter, sort, after, limit, output } } = page
  const attributes = (key === 'csv' || key === 'fgb') && streamed(page)
    ? columnsOfTypes(await page.store.pageAttributeTypes({ scope, filter, page: { sort, after, limit }, cap: page.countMax, output }))
    : undefined
  const source = chunksOf(page, (s) => { summary = s })
  if (key === 'fgb') {
    const parts = await flatGeobuf(parsed(source), input.parsed.output.crs?.srid, attributes)
    return { body: Readable.from(parts, { objectMode: false }), next: summary === undefined ? undefined : nextLink(input, summary) }
  }
  const lines = textLines(key, source, undefined, attributes)
  if (streamed(input)) return { body: Readable.from(lines, { objectMode: false }) }
  const parts: string[] = []
  for await (const part of lines) parts.push(part)
  return { body: Buffer.from(parts.join('')), next: summary === undefined ? undefined : nextLink(input, summary) }
}
