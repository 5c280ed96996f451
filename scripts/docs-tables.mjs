// Writes the tables that docs generate from the code, between their markers: the properties of a
// source in docs/api.md (src/sources/source-properties.ts). Run after `npm run build`:
// `npm run docs:tables`. test/sources/properties.test.ts fails while a table is out of date.
import { readFileSync, writeFileSync } from 'node:fs'
import { propertiesTable } from '../dist/sources/source-properties.js'

/** `text` with the region between `<!-- name:begin -->` and `<!-- name:end -->` replaced by `table`. */
export function withTable (text, name, table) {
  const begin = `<!-- ${name}:begin -->`
  const end = `<!-- ${name}:end -->`
  const a = text.indexOf(begin)
  const b = text.indexOf(end)
  if (a < 0 || b < a) throw new Error(`no ${begin} … ${end} region`)
  return `${text.slice(0, a + begin.length)}\n${table}\n${text.slice(b)}`
}

const api = new URL('../docs/api.md', import.meta.url)
writeFileSync(api, withTable(readFileSync(api, 'utf8'), 'properties', propertiesTable()))
