// A source's attributes: the members of a Feature's `properties` that the service does not own,
// kept as the client sent them (sql/025_source_attributes.sql). Here: which members they are,
// and the rules a JSON value must meet to be stored and read back as it was sent, each refusal
// with a JSON pointer. The properties the service returns (source-properties.ts RESERVED_NAMES)
// are read-only: start_at and end_at are read by geojson.ts, the others ignored, so a Feature
// read from the service posts again as it is.
import type { ErrorDetail } from '../errors.js'
import { RESERVED_NAMES } from './source-properties.js'

/**
 * The largest attributes, in bytes of their JSON text as PostgreSQL writes it (attributes::text,
 * a space after each ':' and ','): sources_attributes_fit in sql/functions/attributes.sql is the
 * rule; this is its number, for the messages and the early refusal of a compact text already
 * beyond it (test/sources/attributes.test.ts holds the two equal).
 */
export const ATTRIBUTES_MAX_BYTES = 16_384

/** Nesting of objects and arrays below `properties`: a GIS attribute is flat; JSON documents seldom go past a few levels. */
export const ATTRIBUTES_MAX_DEPTH = 32

/** An attribute's name: what a column of a view or a GIS layer can be called. */
export const ATTRIBUTE_NAME_MAX = 256

const escapePointer = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1')
// Control characters: PostgreSQL's jsonb cannot hold U+0000, and a column named with one is unusable.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f]/

/** Why a name cannot be an attribute's (a column of a view, a field of a GIS layer), or undefined. */
export function attributeNameProblem (name: string): string | undefined {
  return name.length === 0 || name.length > ATTRIBUTE_NAME_MAX || CONTROL.test(name) || name.trim() !== name
    ? `an attribute's name must be 1 to ${ATTRIBUTE_NAME_MAX} characters, without control characters or leading or trailing spaces`
    : undefined
}

/** The problems of one attribute value, with pointers below `base`. */
function checkValue (value: unknown, base: string, depth: number, details: ErrorDetail[]): void {
  if (details.length >= 100) return
  if (typeof value === 'number') {
    // JSON.parse reads 1e400 as Infinity, which JSON would write back as null.
    if (!Number.isFinite(value)) details.push({ pointer: base, message: 'number is out of range (beyond ±1.8e308, a double\'s range)' })
  } else if (typeof value === 'string') {
    if (value.includes('\u0000')) details.push({ pointer: base, message: 'must not contain the character U+0000 (PostgreSQL\'s jsonb cannot hold it)' })
  } else if (value !== null && typeof value === 'object') {
    if (depth >= ATTRIBUTES_MAX_DEPTH) {
      details.push({ pointer: base, message: `nests deeper than ${ATTRIBUTES_MAX_DEPTH} levels of objects and arrays` })
      return
    }
    if (Array.isArray(value)) {
      value.forEach((v, i) => { checkValue(v, `${base}/${i}`, depth + 1, details) })
    } else {
      for (const [k, v] of Object.entries(value)) {
        if (k.includes('\u0000')) details.push({ pointer: `${base}/${escapePointer(k)}`, message: 'a member name must not contain the character U+0000' })
        else checkValue(v, `${base}/${escapePointer(k)}`, depth + 1, details)
      }
    }
  }
}

/**
 * The attributes of a Feature's `properties` as JSON text to store, or the problems (pointers
 * below `base`, the properties' pointer). Problems of names and values are 400; a text beyond
 * the size is `tooLarge` (413).
 */
export function attributesOf (properties: Record<string, unknown>, base: string): { text: string } | { details: ErrorDetail[], tooLarge: boolean } {
  const kept: Record<string, unknown> = {}
  const details: ErrorDetail[] = []
  for (const [name, value] of Object.entries(properties)) {
    if (RESERVED_NAMES.has(name)) continue
    const pointer = `${base}/${escapePointer(name)}`
    const problem = attributeNameProblem(name)
    if (problem !== undefined) {
      details.push({ pointer, message: problem })
      continue
    }
    checkValue(value, pointer, 1, details)
    kept[name] = value
  }
  if (details.length > 0) return { details: details.slice(0, 100), tooLarge: false }
  const text = JSON.stringify(kept)
  const bytes = Buffer.byteLength(text)
  if (bytes > ATTRIBUTES_MAX_BYTES) {
    return { details: [{ pointer: base, message: tooLargeMessage(bytes, 'compact JSON') }], tooLarge: true }
  }
  return { text }
}

export function tooLargeMessage (bytes: number, as: string): string {
  return `the attributes are ${bytes} bytes as ${as}; at most ${ATTRIBUTES_MAX_BYTES} bytes of their JSON text as PostgreSQL writes it (a space after each ':' and ',') are kept`
}
