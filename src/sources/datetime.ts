// ISO 8601 / RFC 3339 date-times as the API accepts them, parsed to microseconds. Our own rather
// than a library's: PostgreSQL keeps microseconds, and the JavaScript Date that most parsers
// return keeps milliseconds; the rules are strict on purpose (an offset is required with a time,
// a date alone is midnight UTC) and each rejection says which rule failed. Also the `datetime`
// query parameter that items and tiles read alike.
import type { ErrorDetail } from '../errors.js'

export interface ParsedDateTime { iso: string, epochMicros: number }
/** What a `datetime` parameter selects: the periods holding an instant, or meeting an interval. */
export interface DatetimeFilter { at?: string, from?: string, to?: string }

// YYYY-MM-DD, optionally followed by THH:MM[:SS[.fraction]] and a zone (Z or ±HH[:MM]).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

function daysFromCivil (y: number, m: number, d: number): number {
  // Howard Hinnant's days_from_civil: days since 1970-01-01 in the proleptic Gregorian calendar.
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

function daysInMonth (y: number, m: number): number {
  return [31, (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] as number
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')

/** ISO 8601 date-time with Z or an offset, or a date alone (midnight UTC). Returns an error message otherwise. */
export function parseDateTime (text: string): ParsedDateTime | string {
  const m = DATE_TIME.exec(text)
  if (m === null) return 'must be an ISO 8601 date-time with Z or an offset (2024-05-01T12:00:00Z), or a date (2024-05-01)'
  const [, ys, mos, ds, hs, mis, ss, frac, z, sign, ohs, oms] = m
  const y = Number(ys); const mo = Number(mos); const d = Number(ds)
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return 'is not a calendar date'
  if (hs !== undefined && z === undefined && sign === undefined) {
    return 'has a time but no offset: add Z (UTC) or an offset such as +02:00'
  }
  const h = Number(hs ?? 0); const mi = Number(mis ?? 0); const s = Number(ss ?? 0)
  if (h > 23 || mi > 59 || s > 59) return 'has an out-of-range time of day'
  const micros = Number((frac ?? '').padEnd(6, '0').slice(0, 6))
  let offsetMinutes = 0
  let zone = 'Z'
  if (sign !== undefined) {
    const oh = Number(ohs); const om = Number(oms ?? 0)
    if (oh > 15 || om > 59) return 'has an out-of-range offset'
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om)
    zone = `${sign}${pad(oh)}:${pad(om)}`
  }
  const seconds = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offsetMinutes * 60
  return {
    iso: `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}.${pad(micros, 6)}${zone}`,
    epochMicros: seconds * 1_000_000 + micros
  }
}

/**
 * The `datetime` query parameter of items and tiles (OGC API): an instant, or an interval with
 * ".." or nothing for an open end. Problems are pushed to `details` (pointer ?datetime), and then
 * the result is undefined.
 */
export function parseDatetimeParameter (text: string, details: ErrorDetail[], pointer = '?datetime'): DatetimeFilter | undefined {
  const instant = (part: string, which: string): string | null | undefined => {
    if (part === '..' || part === '') return null
    // GDAL's OAPIF driver (3.6) sends a date alone as "2024-05-01T": read it as the date.
    const parsed = parseDateTime(/^\d{4}-\d{2}-\d{2}T$/.test(part) ? part.slice(0, -1) : part)
    if (typeof parsed === 'string') {
      details.push({ pointer, message: `${which} ${JSON.stringify(part)} ${parsed}` })
      return undefined
    }
    return parsed.iso
  }
  const parts = text.split('/')
  if (parts.length === 1) {
    if (text === '..' || text === '') {
      details.push({ pointer, message: 'must be an instant (2024-05-01T12:00:00Z) or an interval (a/b, ../b, a/..)' })
      return undefined
    }
    const at = instant(text, 'the instant')
    return at == null ? undefined : { at }
  }
  if (parts.length !== 2) {
    details.push({ pointer, message: 'an interval has one "/": start/end, with ".." or nothing for an open end' })
    return undefined
  }
  const start = instant(parts[0] as string, 'the start')
  const end = instant(parts[1] as string, 'the end')
  if (start === undefined || end === undefined) return undefined
  if (start === null && end === null) {
    details.push({ pointer, message: 'an interval needs at least one end: a/.., ../b or a/b' })
    return undefined
  }
  if (start !== null && end !== null && Date.parse(start) > Date.parse(end)) {
    details.push({ pointer, message: 'the start of the interval is after its end' })
    return undefined
  }
  return { ...(start !== null ? { from: start } : {}), ...(end !== null ? { to: end } : {}) }
}
