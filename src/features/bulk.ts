// Bulk out and in, for the CLI's export and import. Export reads an organisation's sources (a
// CQL2 filter as on the items) in id ranges, two at a time (features.pager.ts rangeChunks),
// into GeoJSONSeq, NDJSON, CSV (from the Feature texts) or FlatGeobuf (from the Features in
// parts: featureRowChunks, or their bytes through binary COPY: featureBinaryChunks). Import
// streams a GeoJSONSeq/NDJSON or FlatGeobuf file in batches through createSources (the POST
// rules, unchanged), keeps what a client may send (the client's feature id, start_at, end_at,
// the attributes, the geometry; POST ignores the service's own properties), so an export
// imports again, and reports each refused feature with its reason. A repeated feature (same feature id, overlapping period) is refused by the
// database with SOURCE_CONFLICT: counted as already stored, never stored twice. A progress file
// beside the input names how many features are settled, so a resumed import (after kill -9
// too) skips them; a batch stored but not yet recorded there is sent again and is all "already
// stored".
import { createReadStream, createWriteStream } from 'node:fs'
import { readFile, rename, rm, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import { deserialize as readFlatGeobuf } from 'flatgeobuf/lib/mjs/geojson.js'
import type { Scope } from '../db/database.js'
import { ApiError } from '../errors.js'
import { bodyChecker } from '../http/validation.js'
import { createSources } from '../sources/source-changes.js'
import { FeatureInputSchema, type FeatureInput } from '../sources/sources.schema.js'
import type { AttributeSchemaStore } from '../sources/attribute-schemas.store.js'
import type { SourceStore } from '../sources/sources.store.js'
import type { CrsCatalogue } from '../sources/crs.js'
import { featureBinaryChunks, featureChunks, featureRowChunks } from './features.pager.js'
import { parseItemsQuery } from './features.query.js'
import { fileAxes, flatGeobufOfBinaryRows, flatGeobufOfRows, formatLines } from './formats/formats.js'
import { columnsOfTypes } from './formats/columns.js'
import { FILE_BUFFER } from './formats/flatgeobuf.js'

export const EXPORT_FORMATS = ['fgb', 'geojsonseq', 'ndjson', 'csv'] as const
export type ExportFormat = typeof EXPORT_FORMATS[number]

export interface Progress { total?: number, done: (n: number) => void }

/** Writes the sources in `scope` (and the filter) to `to`; returns how many. `copy`: FlatGeobuf through binary COPY or not (default: where the store can). */
export async function exportSources (
  store: SourceStore, scope: Scope, options: { format: ExportFormat, to: string, filter?: string, organisation?: string, crs?: string, catalogue: CrsCatalogue, rowsPerQuery?: number, copy?: boolean },
  progress: (total: number | undefined) => Progress
): Promise<number> {
  const { parsed, details } = parseItemsQuery({ filter: options.filter, organisation: options.organisation, crs: options.crs }, scope === 'all', options.catalogue)
  if (details.length > 0) throw new Error(details.map((d) => `${d.pointer}: ${d.message}`).join('; '))
  parsed.limit = Number.MAX_SAFE_INTEGER
  const rowsPerQuery = options.rowsPerQuery ?? 2000
  let bar: Progress | undefined
  // The bar's total: the sources matching when the export began (one created meanwhile may add to the count).
  const matching = (matched: number | undefined): void => { bar ??= progress(matched) }
  const page = fileAxes({ store, scope, parsed, self: new URL('http://export/'), digest: () => '', rowsPerQuery, countMax: 100_000_000, fixedChunks: true, matching }, options.format)
  let count = 0
  const counted = (n: number): void => {
    bar ??= progress(undefined)
    count += n
    bar.done(count)
  }

  const tmp = `${options.to}.partial`
  // Room for a few of the file's chunks, so that writing one does not hold up making the next (FILE_BUFFER).
  const out = createWriteStream(tmp, { highWaterMark: FILE_BUFFER })
  // The file's own failure (a full disk) fails the export at its next write or at the end; one
  // that comes after the export failed otherwise (writes still queued when it is destroyed) is
  // that failure's, not another.
  let failed: Error | undefined
  out.on('error', (e) => { failed ??= e })
  const write = async (chunk: string | Uint8Array): Promise<void> => {
    if (failed !== undefined) throw failed
    if (!out.write(chunk)) await once(out, 'drain')
  }
  try {
    // CSV and FlatGeobuf name their columns before their rows: every attribute of the matches,
    // each typed to hold all its values (a number beside a string: a string column), read first
    // in one pass, so that no value is left out of the file.
    // FlatGeobuf's pass runs while its first ranges are cut and read (on the pool's other
    // connection); the columns are awaited before the first row is written.
    const attributeColumns = options.format === 'fgb' || options.format === 'csv'
      ? store.attributeTypes({ scope, filter: parsed.filter, page: { sort: parsed.sort, limit: rowsPerQuery }, cap: 0, output: page.parsed.output }).then(columnsOfTypes)
      : Promise.resolve(undefined)
    // Its failure is the export's, met where it is awaited.
    attributeColumns.catch(() => {})
    if (options.format === 'fgb') {
      // Through binary COPY where the database can (the server backend; a filter's values
      // inlinable): the same file, made with a fraction of Node's work (docs/performance.md).
      const { filter, sort, output } = page.parsed
      const copy = options.copy ?? store.canCopyRanges({ scope, filter, page: { sort, after: { values: [], id: '' }, until: '', limit: rowsPerQuery }, cap: 0, output })
      const file = copy
        ? await flatGeobufOfBinaryRows(featureBinaryChunks(page), output, counted, attributeColumns)
        : await flatGeobufOfRows(featureRowChunks(page), output, counted, attributeColumns)
      for await (const chunk of file) await write(chunk)
    } else {
      const attributes = await attributeColumns
      for await (const text of formatLines(options.format, featureChunks(page), counted, attributes)) await write(text)
    }
    out.end()
    await once(out, 'close')
    if (failed !== undefined) throw failed
    await rename(tmp, options.to)
  } catch (e) {
    out.destroy()
    await rm(tmp, { force: true })
    throw e
  }
  return count
}

/** The Features of a file: GeoJSONSeq/NDJSON (RS or not, one per line) or FlatGeobuf (by its magic bytes). */
export async function * readFeatures (file: string): AsyncGenerator<unknown> {
  const head = Buffer.alloc(3)
  const fh = await (await import('node:fs/promises')).open(file, 'r')
  await fh.read(head, 0, 3, 0)
  await fh.close()
  if (head.toString('latin1') === 'fgb') {
    const stream = Readable.toWeb(createReadStream(file)) as unknown as Parameters<typeof readFlatGeobuf>[0]
    yield * readFlatGeobuf(stream)
    return
  }
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })
  let n = 0
  for await (const raw of lines) {
    n++
    const line = (raw.startsWith('\u001e') ? raw.slice(1) : raw).trim()
    if (line === '') continue
    try {
      yield JSON.parse(line)
    } catch (e) {
      yield { unparsable: `line ${n}: ${(e as Error).message}` }
    }
  }
}

// Checked as POST /sources checks each feature (Ajv, the routes' options): the area is a oneOf
// told apart by its type, which TypeBox's Value.Check refuses to read ("Unknown type").
const checkFeature = bodyChecker(FeatureInputSchema)

/** What a client may send of a Feature (its own feature id, the period, the attributes, the geometry: the service's other properties are ignored as POST ignores them), or why not. */
export function asInput (f: unknown): FeatureInput | string {
  if (typeof f !== 'object' || f === null) return 'not a GeoJSON Feature'
  if ('unparsable' in f) return String(f.unparsable)
  const { id, properties, geometry } = f as { id?: unknown, properties?: Record<string, unknown> | null, geometry?: unknown }
  // An export's Feature id is the registry's (src_…); the client's own is its feature_id.
  const featureId = properties?.feature_id ?? id
  const input = { type: 'Feature', id: typeof featureId === 'number' ? String(featureId) : featureId, properties: { ...properties }, geometry }
  const [first] = checkFeature(input)
  return first === undefined ? input as FeatureInput : `${first.pointer === '' ? '/' : first.pointer}: ${first.message}`
}

/** The client's feature id of something read, when it has one (to name a refused feature). */
function clientIdOf (f: unknown): { feature_id?: string } {
  const o = f as { id?: unknown, properties?: { feature_id?: unknown } | null } | null
  const id = o?.properties?.feature_id ?? o?.id
  return typeof id === 'string' || typeof id === 'number' ? { feature_id: String(id) } : {}
}

export interface ImportReport { read: number, stored: number, already: number, refused: Array<{ index: number, feature_id?: string, reason: string }> }

/** A refused feature's client id, as the service keeps it (an integer as its decimal string). */
const idOf = (input: FeatureInput): { feature_id?: string } => input.id === undefined ? {} : { feature_id: String(input.id) }

/** The index in the batch a detail's pointer names (/features/3/...). */
const indexOf = (pointer: string | undefined): number | undefined => {
  const m = /^\/features\/(\d+)/.exec(pointer ?? '')
  return m === null ? undefined : Number(m[1])
}

/**
 * Stores a batch with the POST rules; features refused one by one are taken out and the rest
 * sent again (a batch is all or nothing); one refused with no pointer is found by halving.
 */
async function storeBatch (store: SourceStore, schemas: AttributeSchemaStore, owner: { organisation: string, accountId: string }, batch: Array<{ index: number, input: FeatureInput }>, report: ImportReport): Promise<void> {
  let rest = batch
  while (rest.length > 0) {
    try {
      await createSources(store, schemas, owner, { type: 'FeatureCollection', features: rest.map((b) => b.input) }, { on_conflict: 'record' }, 'record')
      report.stored += rest.length
      return
    } catch (e) {
      if (!(e instanceof ApiError)) throw e
      const named = new Map<number, string>()
      for (const d of e.details ?? []) {
        const i = indexOf(d.pointer)
        if (i !== undefined && !named.has(i)) named.set(i, e.code === 'SOURCE_CONFLICT' ? 'already' : `${e.code}: ${d.message}`)
      }
      if (named.size === 0) {
        if (rest.length === 1) {
          report.refused.push({ index: rest[0]!.index, ...idOf(rest[0]!.input), reason: `${e.code}: ${e.message}` })
          return
        }
        const half = Math.ceil(rest.length / 2)
        await storeBatch(store, schemas, owner, rest.slice(0, half), report)
        rest = rest.slice(half)
        continue
      }
      for (const [i, why] of named) {
        const b = rest[i]
        if (b === undefined) continue
        if (why === 'already') report.already++
        else report.refused.push({ index: b.index, ...idOf(b.input), reason: why })
      }
      rest = rest.filter((_, i) => !named.has(i))
    }
  }
}

/** Imports `file` as `owner`, in batches; resumes from `${file}.progress` and removes it when done. */
export async function importSources (
  store: SourceStore, schemas: AttributeSchemaStore, owner: { organisation: string, accountId: string }, file: string,
  options: { batchSize?: number, progressFile?: string, onBatch?: (report: ImportReport) => void } = {}
): Promise<ImportReport & { skipped: number }> {
  const progressFile = options.progressFile ?? `${file}.progress`
  const batchSize = options.batchSize ?? 1000
  const settled = Number((await readFile(progressFile, 'utf8').catch(() => '0')).trim()) || 0
  const report: ImportReport = { read: 0, stored: 0, already: 0, refused: [] }
  let batch: Array<{ index: number, input: FeatureInput }> = []
  const flush = async (upTo: number): Promise<void> => {
    if (batch.length > 0) await storeBatch(store, schemas, owner, batch, report)
    batch = []
    // Written after the batch is stored: a crash in between sends it again, all "already".
    await writeFile(`${progressFile}.tmp`, String(upTo))
    await rename(`${progressFile}.tmp`, progressFile)
    options.onBatch?.(report)
  }
  let index = 0
  for await (const f of readFeatures(file)) {
    index++
    if (index <= settled) continue
    report.read++
    const input = asInput(f)
    if (typeof input === 'string') report.refused.push({ index: index - 1, ...clientIdOf(f), reason: input })
    else batch.push({ index: index - 1, input })
    if (batch.length >= batchSize) await flush(index)
  }
  await flush(index)
  await rm(progressFile, { force: true })
  return { ...report, skipped: settled }
}
