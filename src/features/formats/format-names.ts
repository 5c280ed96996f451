// The formats of the items: their f= names, media types and file extensions, one list.
export interface Format { key: string, f: readonly string[], type: string, title: string, extension: string }

/** Every format of the items, GeoJSON first (the answer to Accept: *\/*). */
export const ITEM_FORMATS = [
  { key: 'geojson', f: ['json', 'geojson'], type: 'application/geo+json', title: 'GeoJSON', extension: 'geojson' },
  { key: 'geojsonseq', f: ['geojsonseq'], type: 'application/geo+json-seq', title: 'GeoJSON text sequence (RFC 8142)', extension: 'geojsons' },
  { key: 'ndjson', f: ['ndjson'], type: 'application/x-ndjson', title: 'Newline-delimited GeoJSON', extension: 'ndjson' },
  { key: 'csv', f: ['csv'], type: 'text/csv', title: 'CSV (geometry as WKT)', extension: 'csv' },
  { key: 'fgb', f: ['fgb', 'flatgeobuf'], type: 'application/flatgeobuf', title: 'FlatGeobuf (with its spatial index)', extension: 'fgb' },
  { key: 'html', f: ['html'], type: 'text/html', title: 'A page for people', extension: 'html' }
] as const satisfies readonly Format[]

export type FormatKey = typeof ITEM_FORMATS[number]['key']
export const FORMAT_NAMES: readonly string[] = ITEM_FORMATS.flatMap((t) => t.f)
export const formatByName = (f: string): Format | undefined => ITEM_FORMATS.find((t) => (t.f as readonly string[]).includes(f))
export const formatByKey = (key: FormatKey): Format => ITEM_FORMATS.find((t) => t.key === key) as Format

