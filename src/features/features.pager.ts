// One page of items as the text sent for it: the sources' Feature text that PostgreSQL makes
// (sources.listing.ts featureText), read in chunks that continue one another, spliced into a
// FeatureCollection with its links and counts; sent as one buffer, or streamed when it is larger
// than one query reads.
import { Readable } from 'node:stream'
import type { Scope } from '../db/database.js'
import type { SourceStore } from '../sources/sources.store.js'
import type { FeatureRow, ListInput, RangePage, SortValues } from '../sources/sources.listing.js'
import type { BinaryRows } from '../db/copy-binary.js'
import { encodeCursor } from './features.cursor.js'
import type { ParsedItems } from './features.query.js'

const GEOJSON = 'application/geo+json'
const STREAM_FIRST_ROWS = 10
const STREAM_CHUNK_BYTES = 128 * 1024

export interface ItemsPage {
  store: Pick<SourceStore, 'list' | 'listFirst' | 'listRange' | 'listRangeRows' | 'listRangeBinary' | 'canCopyRanges' | 'rangeBounds' | 'count' | 'pageAttributeTypes'>
  scope: Scope
  /** The parsed query: filter, sort, limit and, from a cursor, where the page starts. */
  parsed: ParsedItems
  /** The URL asked for: the self link, and the next link with a cursor. */
  self: URL
  /** What a cursor is bound to (features.cursor.ts queryDigest). */
  digest: () => string
  /** ITEMS_ROWS_PER_QUERY and ITEMS_COUNT_MAX. */
  rowsPerQuery: number
  countMax: number
  /** A bulk export (the CLI's): every match in id ranges of rowsPerQuery (rangeChunks), not chunks sized by bytes. */
  fixedChunks?: boolean
  /** A bulk export's: told how many sources match (undefined: more than countMax), before the first chunk. */
  matching?: (matched: number | undefined) => void
}

/**
 * The parts, UTF-8 encoded into one buffer. Sent as a string, a page's text would be copied twice
 * more on V8's heap: joined into one string (for its byte length, Content-Length), then again
 * behind the response's header (Node's http sends a string body in one piece with its head).
 * A buffer lives outside the young generation that each copy fills.
 */
function utf8Join (parts: readonly string[]): Buffer {
  let bytes = 0
  for (const part of parts) bytes += Buffer.byteLength(part)
  const out = Buffer.allocUnsafe(bytes)
  let at = 0
  for (const part of parts) at += out.write(part, at)
  return out
}

// A page over ITEMS_ROWS_PER_QUERY rows is read and sent in chunks, each query continuing
// after the last row of the one before (keyset, as the cursor does), so the service holds one
// chunk of a 10,000-feature page at a time, and no connection while the client reads. Chunks
// are sized by bytes: STREAM_FIRST_ROWS first, then as many rows as make about
// STREAM_CHUNK_BYTES at the size seen so far (at most ITEMS_ROWS_PER_QUERY), so a page of
// 500-vertex polygons holds as little at a time as a page of small boxes. Each chunk is
// copied a few times on its way (PostgreSQL's message, a string, the socket's buffer), so
// larger chunks raise the peak memory of a big page more than they save time
// (docs/performance.md).
export const streamed = ({ parsed, rowsPerQuery }: ItemsPage): boolean => parsed.limit > rowsPerQuery

/** What reading a page found: how many Features, whether more follow, and where they start. */
export interface PageSummary {
  returned: number
  more: boolean
  after?: { values: SortValues, id: string }
  /** numberMatched, counted on a first page only (up to ITEMS_COUNT_MAX). */
  matched?: number
}

/**
 * The page's Features as the texts PostgreSQL made, comma-separated, one chunk per query; what
 * it found is the generator's return value.
 */
export async function * featureChunks (input: ItemsPage): AsyncGenerator<string, PageSummary> {
  if (input.fixedChunks === true) return yield * rangeChunks(input, input.store.listRange)
  const { store, scope, parsed, rowsPerQuery, countMax } = input
  const { filter, sort, limit, output } = parsed
  const chunked = streamed(input)
  let after = parsed.after
  let returned = 0
  let bytes = 0
  let more = false
  let matched: number | undefined
  while (returned < limit) {
    const rowsForBytes = returned === 0 ? STREAM_FIRST_ROWS : Math.floor(STREAM_CHUNK_BYTES * returned / Math.max(bytes, 1))
    const want = Math.max(1, Math.min(chunked ? rowsForBytes : rowsPerQuery, rowsPerQuery, limit - returned))
    // numberMatched on a first page (no cursor: where GDAL and QGIS read it), counted up to
    // ITEMS_COUNT_MAX in the statement that reads the page; beyond, and on later pages, it
    // is left out (OGC allows that) rather than counting up to a million rows per page.
    let page
    if (returned === 0 && after === undefined) {
      const first = await store.listFirst({ scope, filter, page: { sort, limit: want }, cap: countMax, output })
      matched = first.matched
      page = first.page
    } else {
      page = await store.list({ scope, filter, page: { sort, after, limit: want }, cap: countMax, output })
    }
    returned += Number(page.returned)
    if (page.last_id !== null && page.last_sort_values !== null) after = { values: JSON.parse(page.last_sort_values) as SortValues, id: page.last_id }
    more = page.more
    if (page.features !== null) {
      bytes += page.features.length
      yield page.features
    }
    if (!more) break
  }
  return { returned, more, after, matched }
}

/** The ranges a bulk export's first rangeBounds cuts (then eight times as many each time, up to sources.listing.ts RANGES_PER_CUT). */
export const FIRST_CUT = 4

/** Id ranges a bulk export reads at once: its pool's two connections, one for each core PostgreSQL makes Features on. */
const RANGES_IN_FLIGHT = 2

/**
 * Every match, in id order, as a bulk export reads them: the ids are cut into ranges of
 * rowsPerQuery matches (rangeBounds, RANGES_PER_CUT ranges a statement, cut as the export goes),
 * and RANGES_IN_FLIGHT ranges are read at once (`read`: listRange's Feature texts, or
 * listRangeRows' rows for FlatGeobuf), over as many connections, while Node encodes the one
 * before. PostgreSQL's making of the Feature texts was a text export's critical path
 * (docs/performance.md): one connection used one of its cores. (The embedded database runs one
 * statement at a time: there the reads queue.) The ranges cover every id (the last runs to the
 * end), so a source that exists throughout the export is in it once; each query sees what was
 * committed when it began, and none is one snapshot. A range that gained sources after it was
 * cut is read in several queries.
 */
async function * rangeChunks<T> (input: ItemsPage, read: (input: ListInput) => Promise<RangePage<T>>): AsyncGenerator<T, PageSummary> {
  const { store, scope, parsed, rowsPerQuery, countMax } = input
  const { filter, sort, output } = parsed
  const [key, ...more] = sort
  if (parsed.after !== undefined || more.length > 0 || key?.field !== 'id' || key.descending) throw new RangeError('a bulk export reads every match in ascending id order')
  const matched = await store.count({ scope, filter, page: { sort, limit: rowsPerQuery }, cap: countMax, output })
  input.matching?.(matched)
  // The ranges cut so far ({ from, until }: after from, up to until; the last, to the end).
  const ranges: Array<{ from?: string, until?: string }> = []
  let cutAll = false
  // The first cut small, so the first rows are read at once (a cut of every id of a large export
  // held them back: docs/performance.md); the next ones larger, while the ranges cut are read.
  let perCut = FIRST_CUT
  const cutMore = async (): Promise<void> => {
    const from = ranges.at(-1)?.until
    const cut = await store.rangeBounds({ scope, filter, page: { sort, after: from === undefined ? undefined : { values: [], id: from }, limit: rowsPerQuery, ranges: perCut }, cap: countMax, output })
    perCut *= 8
    let at = from
    for (const until of cut.bounds) { ranges.push({ from: at, until }); at = until }
    if (!cut.more) { ranges.push({ from: at }); cutAll = true }
  }
  let stopped = false
  const readRange = async ({ from, until }: { from?: string, until?: string }): Promise<{ texts: T[], returned: number }> => {
    const texts: T[] = []
    let returned = 0
    let after = from === undefined ? undefined : { values: [], id: from }
    for (;;) {
      const page = await read({ scope, filter, page: { sort, after, until, limit: rowsPerQuery }, cap: countMax, output })
      returned += page.returned
      if (page.features !== null) texts.push(page.features)
      if (!page.more || page.lastId === null || stopped) return { texts, returned }
      after = { values: [], id: page.lastId }
    }
  }
  const reading: Array<ReturnType<typeof readRange>> = []
  let next = 0
  const readNext = async (): Promise<void> => {
    if (next === ranges.length && !cutAll) await cutMore()
    const range = ranges[next]
    if (range === undefined) return
    next++
    const read = readRange(range)
    // Awaited in its turn; if the caller stops first, its failure is no one's to report.
    read.catch(() => {})
    reading.push(read)
  }
  let returned = 0
  try {
    for (let i = 0; i < RANGES_IN_FLIGHT; i++) await readNext()
    for (let read = reading.shift(); read !== undefined; read = reading.shift()) {
      const { texts, returned: n } = await read
      await readNext()
      returned += n
      yield * texts
    }
  } finally {
    // The caller stopped (its write failed) or a read failed: no range goes on to another query.
    stopped = true
  }
  return { returned, more: false, matched }
}

/**
 * Every match of a bulk export as rangeChunks reads them, each range's sources as rows with their
 * Features in parts (sources.listing.ts rangeRowsQuery): for the FlatGeobuf export, which encodes
 * each value itself.
 */
export async function * featureRowChunks (input: ItemsPage): AsyncGenerator<FeatureRow[], PageSummary> {
  return yield * rangeChunks(input, input.store.listRangeRows)
}

/** The same as binary rows (the store's listRangeBinary), where the store can copy them (canCopyRanges). */
export async function * featureBinaryChunks (input: ItemsPage): AsyncGenerator<BinaryRows, PageSummary> {
  return yield * rangeChunks(input, input.store.listRangeBinary)
}

/** The next page's URL, when there is one. */
export function nextLink ({ self, parsed, digest }: ItemsPage, { more, after }: PageSummary): URL | undefined {
  if (!more || after === undefined) return undefined
  const next = new URL(self)
  next.searchParams.set('limit', String(parsed.limit))
  next.searchParams.set('cursor', encodeCursor(after.values, after.id, digest()))
  return next
}

/** The page's text, in the parts it is read in. */
export async function * itemsParts (input: ItemsPage): AsyncGenerator<string> {
  yield '{"type":"FeatureCollection","features":['
  const chunks = featureChunks(input)
  let first = true
  let r = await chunks.next()
  while (r.done !== true) {
    yield first ? r.value : `,${r.value}`
    first = false
    r = await chunks.next()
  }
  const summary = r.value
  const links = [{ href: input.self.toString(), rel: 'self', type: GEOJSON, title: 'This page' }]
  const next = nextLink(input, summary)
  if (next !== undefined) links.push({ href: next.toString(), rel: 'next', type: GEOJSON, title: 'Next page' })
  const { returned, matched } = summary
  const tail = JSON.stringify({ links, numberReturned: returned, ...(matched !== undefined ? { numberMatched: matched } : {}), timeStamp: new Date().toISOString() })
  yield `],${tail.slice(1)}`
}

/**
 * The page as the body to send. Each feature is exactly GET /sources/?id='s, made by PostgreSQL
 * (sources.listing.ts featureText) and spliced as text. A page that fits in one query is sent as
 * one buffer (see utf8Join); a larger one as a byte stream, which reads the next chunk only when
 * the socket has taken the last (objectMode would queue 16 chunks).
 */
export async function itemsBody (input: ItemsPage): Promise<Buffer | Readable> {
  if (streamed(input)) return Readable.from(itemsParts(input), { objectMode: false })
  const parts: string[] = []
  for await (const part of itemsParts(input)) parts.push(part)
  return utf8Join(parts)
}
