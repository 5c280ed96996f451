// CQL2 filters (OGC 21-065r2) of the items, text or JSON, checked into a FilterExpr
// (sources/filter.sql.ts) that the listing turns into parameterised SQL. Both encodings meet as
// CQL2 JSON: the text grammar (cql2-text.grammar.ts) produces it, a cql2-json filter is it.
// Here every property is looked up among the queryables, every operand typed, every literal
// checked (dates on the calendar, positions in CRS84, rings closed), and the limits applied; each
// refusal is one message naming what is wrong and where (a character of the text, a JSON pointer).
import { parseDateTime } from '../../sources/datetime.js'
import { type SearchBox, searchBoxes } from '../../sources/search-box.js'
import {
  type Comparison, type FilterExpr, type Geom, type Instant, type InstantProperty, type Queryable, QUERYABLE_TYPES, type Scalar,
  type FilterQueryables, type QueryableType, type SpatialRelation, type Temporal, type TemporalRelation
} from '../../sources/filter.sql.js'
import { TEXT_OFFSET, parseCql2Text } from './cql2-text.grammar.js'
import type { AttributeType } from '../../sources/attribute-schemas.js'

export const FILTER_LIMITS = Object.freeze({
  /** Characters of a filter (after URL decoding). */
  characters: 8192,
  /** Levels of nested expressions (AND/OR/NOT, predicates, functions). */
  depth: 20,
  /** Expressions, operands and list items. */
  nodes: 256,
  /** Positions of all geometry literals together. */
  vertices: 1000
})

export const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
export const FILTER_LANGS = ['cql2-text', 'cql2-json'] as const

export interface CheckedFilter {
  expr: FilterExpr
  /** WKT of the literals whose validity only PostGIS can judge (lines and polygons). */
  geometries: string[]
}

class FilterError extends Error {}

type Type = 'string' | 'number' | 'boolean' | 'timestamp' | 'geometry' | 'interval' | 'any'
type Operand =
  | { type: 'string' | 'number' | 'boolean', scalar: Scalar }
  /** An undeclared attribute (properties.name): it takes the type of what it is compared with. */
  | { type: 'any', attribute: string, scalar: Scalar }
  | { type: 'timestamp', scalar: Scalar, instant: Instant }
  | { type: 'geometry', geom: Geom, degenerate: boolean }
  | { type: 'interval', temporal: Temporal }

const TYPE_NAMES: Record<Type, string> = {
  string: 'a character string', number: 'a number', boolean: 'a boolean', timestamp: 'a timestamp (or date)', geometry: 'a geometry', interval: 'an interval', any: 'an attribute of any type'
}

/** The prefix that names an attribute in a filter, declared or not (properties.parcel_no). */
export const ATTRIBUTE_PREFIX = 'properties.'

const COMPARISONS = new Set<string>(['=', '<>', '<', '>', '<=', '>='])
const SPATIAL: Record<string, SpatialRelation> = {
  s_intersects: 'intersects', s_disjoint: 'disjoint', s_within: 'within', s_contains: 'contains',
  s_equals: 'equals', s_overlaps: 'overlaps', s_touches: 'touches', s_crosses: 'crosses'
}
const TEMPORAL: Record<string, TemporalRelation> = {
  t_after: 'after', t_before: 'before', t_disjoint: 'disjoint', t_equals: 'equals', t_intersects: 'intersects',
  t_contains: 'contains', t_during: 'during', t_finishedby: 'finishedBy', t_finishes: 'finishes', t_meets: 'meets',
  t_metby: 'metBy', t_overlappedby: 'overlappedBy', t_overlaps: 'overlaps', t_startedby: 'startedBy', t_starts: 'starts'
}
/** Relations of Table 8: defined on intervals only ("using these functions with instants will result in a client error"). */
const INTERVALS_ONLY = new Set<TemporalRelation>(['contains', 'during', 'finishedBy', 'finishes', 'meets', 'metBy', 'overlappedBy', 'overlaps', 'startedBy', 'starts'])
/** The sources' queryables (source-properties.ts), with attributes. */
export const SOURCE_QUERYABLES: FilterQueryables = { types: QUERYABLE_TYPES, attributes: true, period: ['start_at', 'end_at'] }

const DATE = /^\d{4}-\d{2}-\d{2}$/
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?[Zz]$/

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isProperty = (v: unknown): v is { property: string } => isObject(v) && typeof v.property === 'string'
const spell = (op: string): string => op.toUpperCase()

/** Checks one filter (its JSON form); the encoding only changes how a place is named. */
class Checker {
  private nodes = 0
  private vertices = 0
  readonly geometries: string[] = []

  private readonly types: Readonly<Record<string, QueryableType>>
  private readonly names: string
  private readonly instants: string
  private readonly periodHint: string

  constructor (private readonly text: boolean, private readonly declared: ReadonlyMap<string, AttributeType>, private readonly queryables: FilterQueryables) {
    this.types = queryables.types
    this.names = Object.keys(this.types).join(', ')
    this.instants = Object.keys(this.types).filter((name) => this.types[name] === 'timestamp').join(', ')
    this.periodHint = `INTERVAL(${queryables.period.join(', ')})`
  }

  private fail (node: unknown, path: string, message: string): never {
    const offset = isObject(node) ? (node as Record<symbol, unknown>)[TEXT_OFFSET] : undefined
    const where = this.text ? (typeof offset === 'number' ? ` (at character ${offset + 1})` : '') : ` (at ${path === '' ? 'the top' : path})`
    throw new FilterError(`${message}${where}`)
  }

  private enter (node: unknown, path: string, depth: number): void {
    if (depth > FILTER_LIMITS.depth) this.fail(node, path, `nests deeper than the limit of ${FILTER_LIMITS.depth} levels`)
    if (++this.nodes > FILTER_LIMITS.nodes) this.fail(node, path, `has more than the limit of ${FILTER_LIMITS.nodes} expressions, operands and list items`)
  }

  private args (node: Record<string, unknown>, path: string, counts: number[]): unknown[] {
    const args = node.args
    const name = spell(String(node.op))
    if (!Array.isArray(args)) this.fail(node, path, `${name} needs "args", an array of its operands`)
    if (!counts.includes(args.length)) this.fail(node, path, `${name} takes ${counts.join(' or ')} operand${counts.at(-1) === 1 ? '' : 's'}, not ${args.length}`)
    return args
  }

  predicate (node: unknown, path: string, depth: number): FilterExpr {
    this.enter(node, path, depth)
    if (typeof node === 'boolean') return { op: 'literal', value: node }
    if (!isObject(node) || typeof node.op !== 'string') {
      const what = this.describe(node)
      this.fail(node, path, `${what} is not a predicate: compare it (=, <>, <, >, <=, >=) or use it in a function such as S_INTERSECTS`)
    }
    const op = node.op
    const lower = op.toLowerCase()
    const at = (i: number): string => `${path}/args/${i}`
    if (lower === 'and' || lower === 'or') {
      const args = node.args
      if (!Array.isArray(args) || args.length < 2) this.fail(node, path, `${spell(op)} needs "args", an array of at least 2 predicates`)
      return { op: lower, args: args.map((a, i) => this.predicate(a, at(i), depth + 1)) }
    }
    if (lower === 'not') return { op: 'not', arg: this.predicate(this.args(node, path, [1])[0], at(0), depth + 1) }
    if (COMPARISONS.has(op)) {
      const [a, b] = this.args(node, path, [2]).map((x, i) => this.scalar(x, at(i), depth + 1))
      this.sameType(node, path, op, [a, b] as [ScalarOperand, ScalarOperand], node.args as unknown[])
      return { op: 'compare', cmp: op as Comparison, args: [(a as ScalarOperand).scalar, (b as ScalarOperand).scalar] }
    }
    if (lower === 'like') {
      const [value, pattern] = this.args(node, path, [2])
      const left = this.scalar(value, at(0), depth + 1)
      if (left.type === 'any') this.resolve(node, path, 'LIKE', [left, { type: 'string', scalar: { text: '' } }])
      if (left.type !== 'string') this.fail(value, at(0), `LIKE compares a character string, not ${TYPE_NAMES[left.type]}`)
      if (isObject(pattern) && typeof pattern.op === 'string' && ['casei', 'accenti'].includes(pattern.op.toLowerCase())) this.unsupported(pattern, at(1), pattern.op)
      if (typeof pattern !== 'string') this.fail(pattern, at(1), 'the pattern of LIKE must be a character string literal')
      this.enter(pattern, at(1), depth + 1)
      this.noNul(pattern, at(1))
      // PostgreSQL refuses a pattern ending in its escape character; CQL2 gives it no meaning either.
      if (/(?:^|[^\\])(?:\\\\)*\\$/.test(pattern)) this.fail(pattern, at(1), 'the pattern of LIKE ends with the escape character \\ (escape it as \\\\ to match a backslash)')
      return { op: 'like', args: [left.scalar, { text: pattern }] }
    }
    if (lower === 'between') {
      const operands = this.args(node, path, [3]).map((x, i) => this.scalar(x, at(i), depth + 1))
      this.sameType(node, path, 'BETWEEN', operands, node.args as unknown[])
      for (const [i, o] of operands.entries()) {
        if (o.type !== 'number' && o.type !== 'timestamp') this.fail(node, at(i), `BETWEEN compares numbers (or timestamps), not ${TYPE_NAMES[o.type]}`)
      }
      return { op: 'between', args: operands.map((o) => o.scalar) as [Scalar, Scalar, Scalar] }
    }
    if (lower === 'in') {
      const [value, list] = this.args(node, path, [2])
      const left = this.scalar(value, at(0), depth + 1)
      if (!Array.isArray(list) || list.length === 0) this.fail(list, at(1), 'IN needs a list of at least one value')
      const items = list.map((x, i) => this.scalar(x, `${at(1)}/${i}`, depth + 1))
      this.sameType(node, path, 'IN', [left, ...items], [value, ...list])
      return { op: 'in', value: left.scalar, list: items.map((o) => o.scalar) }
    }
    if (lower === 'isnull') {
      const [value] = this.args(node, path, [1])
      const operand = this.operand(value, at(0), depth + 1)
      // Geometries and intervals of a source are never null, nor is any literal.
      if (operand.type === 'geometry' || operand.type === 'interval') return { op: 'literal', value: false }
      return { op: 'isNull', arg: operand.scalar }
    }
    const spatial = SPATIAL[lower]
    if (spatial !== undefined) {
      const [a, b] = this.args(node, path, [2]).map((x, i) => {
        const o = this.operand(x, at(i), depth + 1)
        if (o.type !== 'geometry') this.fail(x, at(i), `${spell(op)} relates geometries, and ${this.named(x, o.type)}: ${this.geometryHint(x)}`)
        return o
      }) as [GeometryOperand, GeometryOperand]
      if ((a.degenerate || b.degenerate) && spatial !== 'intersects' && spatial !== 'disjoint') {
        this.fail(node, path, `a BBOX without width or height is not an area: ${spell(op)} needs one (S_INTERSECTS and S_DISJOINT take it)`)
      }
      return { op: 'spatial', relation: spatial, args: [a.geom, b.geom] }
    }
    const temporal = TEMPORAL[lower]
    if (temporal !== undefined) {
      const operands = this.args(node, path, [2]).map((x, i) => this.temporal(x, at(i), depth + 1, spell(op)))
      if (INTERVALS_ONLY.has(temporal)) {
        for (const [i, t] of operands.entries()) {
          if ('at' in t) this.fail((node.args as unknown[])[i], at(i), `${spell(op)} relates intervals, and this is an instant: use ${this.periodHint} or INTERVAL('…', '…')`)
        }
      }
      return { op: 'temporal', relation: temporal, args: operands as [Temporal, Temporal] }
    }
    return this.unsupported(node, path, op)
  }

  private unsupported (node: unknown, path: string, op: string): never {
    const lower = op.toLowerCase()
    if (lower === 'casei' || lower === 'accenti') this.fail(node, path, `${spell(op)} is not supported (no case- or accent-insensitive comparison)`)
    if (/^a_/.test(lower)) this.fail(node, path, `${spell(op)} is not supported: no queryable is an array`)
    if (['+', '-', '*', '/', '%', '^', 'div'].includes(lower)) this.fail(node, path, `arithmetic (${op}) is not supported`)
    this.fail(node, path, `unknown function ${JSON.stringify(op)}: the functions are the comparisons, LIKE, BETWEEN, IN, IS NULL, S_* and T_*`)
  }

  /**
   * Operands of one type, or a refusal naming them: the property and its type, the literal, and
   * the literal written as the property's type takes it (TIMESTAMP('…') for a quoted date).
   */
  private sameType (node: unknown, path: string, name: string, operands: Array<{ type: Type }>, nodes: unknown[]): void {
    this.resolve(node, path, name, operands as Operand[])
    const first = operands[0] as { type: Type }
    const i = operands.findIndex((o) => o.type !== first.type)
    if (i < 0) return
    const other = operands[i] as { type: Type }
    const [pAt, xAt] = isProperty(nodes[0]) || !isProperty(nodes[i]) ? [0, i] : [i, 0]
    const [p, x] = [nodes[pAt], nodes[xAt]]
    const [pType, xType] = [(operands[pAt] as { type: Type }).type, (operands[xAt] as { type: Type }).type]
    if (!isProperty(p)) this.fail(node, path, `${name} has operands of different types: ${this.named(nodes[0], first.type)}, ${this.named(nodes[i], other.type)}`)
    const why = isProperty(x) ? 'a property is compared with one of its own type' : this.literalHint(pType, x)
    this.fail(node, path, `${name} has operands of different types: ${this.named(p, pType)}, ${this.named(x, xType)}: ${why}`)
  }

  /** Undeclared attributes take the type of the first operand that has one (a literal's, a property's). */
  private resolve (node: unknown, path: string, name: string, operands: Operand[]): void {
    if (!operands.some((o) => o.type === 'any')) return
    const typed = operands.find((o) => o.type !== 'any')
    if (typed === undefined) this.fail(node, path, `${name} compares attributes whose types are unknown: compare an undeclared attribute with a literal, whose type is the attribute's`)
    if (typed.type !== 'string' && typed.type !== 'number' && typed.type !== 'boolean' && typed.type !== 'timestamp') {
      this.fail(node, path, `${name}: an attribute is compared with a character string, a number, a boolean or a timestamp, not ${TYPE_NAMES[typed.type]}`)
    }
    for (const o of operands) {
      if (o.type !== 'any') continue
      const scalar = { attribute: o.attribute, as: typed.type }
      Object.assign(o, typed.type === 'timestamp' ? { type: 'timestamp', scalar, instant: scalar } : { type: typed.type, scalar })
    }
  }

  /** "the property start_at is a timestamp", "'2024-01-01' is a character string". */
  private named (node: unknown, type: Type): string {
    const what = type === 'timestamp' ? 'a timestamp' : TYPE_NAMES[type]
    if (isProperty(node)) return `the property ${node.property} is ${what}`
    const literal = this.literal(node)
    return literal === undefined ? `one is ${what}` : `${literal} is ${what}`
  }

  /** A literal as this encoding writes it, or undefined for an expression. */
  private literal (node: unknown): string | undefined {
    if (typeof node === 'string') return this.text ? `'${node.replace(/'/g, "''")}'` : JSON.stringify(node)
    if (typeof node === 'number' || typeof node === 'boolean') return this.text ? String(node).toUpperCase() : JSON.stringify(node)
    if (isObject(node) && ('date' in node || 'timestamp' in node)) {
      const [fn, value] = 'date' in node ? ['DATE', node.date] : ['TIMESTAMP', node.timestamp]
      return this.text ? `${fn}('${String(value)}')` : JSON.stringify(node)
    }
    return undefined
  }

  /** How to write `literal` for a property of `type`. */
  private literalHint (type: Type, literal: unknown): string {
    const text = typeof literal === 'string' ? literal : String(literal)
    const as = (fn: 'DATE' | 'TIMESTAMP', value: string): string => this.text ? `${fn}('${value}')` : JSON.stringify({ [fn.toLowerCase()]: value })
    if (type === 'timestamp') {
      if (DATE.test(text)) return `write the date as ${as('DATE', text)} (or ${as('TIMESTAMP', `${text}T00:00:00Z`)})`
      if (TIMESTAMP.test(text)) return `write the instant as ${as('TIMESTAMP', text)}`
      return `write an instant as ${as('DATE', '2024-01-01')} or ${as('TIMESTAMP', '2024-01-01T00:00:00Z')} (RFC 3339, UTC)`
    }
    if (type === 'number') {
      return typeof literal === 'string' && text.trim() !== '' && Number.isFinite(Number(text))
        ? `write the number without quotes: ${Number(text)}`
        : 'compare it with a number, written without quotes (such as 1000)'
    }
    if (type === 'boolean') return `compare it with ${this.text ? 'TRUE or FALSE' : 'true or false'}, without quotes`
    if (type === 'string') return `quote the value: ${this.text ? `'${text.replace(/'/g, "''")}'` : JSON.stringify(text)}`
    return `use ${TYPE_NAMES[type]}`
  }

  /** What a spatial function takes instead of `node`. */
  private geometryHint (node: unknown): string {
    if (typeof node === 'string' && /^\s*(POINT|LINESTRING|POLYGON|MULTI|GEOMETRYCOLLECTION|BBOX)/i.test(node) && this.text) return `write the geometry without quotes: ${node.trim()}`
    return `use the property geometry, or a literal such as ${this.text ? 'POINT(5.1 52.0), BBOX(5, 52, 5.3, 52.2) or POLYGON((…))' : '{"type": "Point", "coordinates": [5.1, 52.0]} or {"bbox": [5, 52, 5.3, 52.2]}'}`
  }

  private scalar (node: unknown, path: string, depth: number): ScalarOperand {
    const o = this.operand(node, path, depth)
    if (o.type === 'geometry' || o.type === 'interval') this.fail(node, path, `${TYPE_NAMES[o.type]} cannot be compared this way: use S_* for geometries, T_* for intervals`)
    return o
  }

  private describe (node: unknown): string {
    if (isObject(node) && typeof node.property === 'string') return `the property ${node.property}`
    if (typeof node === 'string') return `the string ${JSON.stringify(node)}`
    if (typeof node === 'number') return `the number ${node}`
    if (node === null) return 'null'
    return Array.isArray(node) ? 'an array' : 'this value'
  }

  private noNul (text: string, path: string): void {
    if (text.includes('\u0000')) this.fail(text, path, 'a character string must not contain U+0000 (%00): no source\'s value can hold it')
  }

  operand (node: unknown, path: string, depth: number): Operand {
    this.enter(node, path, depth)
    if (typeof node === 'string') {
      this.noNul(node, path)
      return { type: 'string', scalar: { text: node } }
    }
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) this.fail(node, path, 'the number is out of range: a number must be finite (within ±1.8e308)')
      return { type: 'number', scalar: { number: node + 0 } }
    }
    if (typeof node === 'boolean') return { type: 'boolean', scalar: { boolean: node } }
    if (node === null) this.fail(node, path, 'null is not a CQL2 value: test for it with IS NULL')
    if (Array.isArray(node)) this.fail(node, path, 'arrays are not supported: no queryable is an array')
    if (!isObject(node)) this.fail(node, path, 'this is not a CQL2 value')
    if ('property' in node) return this.property(node, path)
    if ('date' in node || 'timestamp' in node) {
      const instant = this.instant(node, path)
      return { type: 'timestamp', scalar: { timestamp: instant }, instant: { timestamp: instant } }
    }
    if ('interval' in node) return { type: 'interval', temporal: this.interval(node, path) }
    if ('bbox' in node) return this.bbox(node, path)
    if ('type' in node) return this.geometry(node, path)
    if (typeof node.op === 'string') {
      if (COMPARISONS.has(node.op) || SPATIAL[node.op.toLowerCase()] !== undefined || TEMPORAL[node.op.toLowerCase()] !== undefined ||
        ['and', 'or', 'not', 'like', 'between', 'in', 'isnull'].includes(node.op.toLowerCase())) {
        this.fail(node, path, `${spell(node.op)} is a predicate, not a value`)
      }
      this.unsupported(node, path, node.op)
    }
    this.fail(node, path, 'this object is not a CQL2 value (a property, a date, timestamp, interval, geometry or bbox)')
  }

  private property (node: Record<string, unknown>, path: string): Operand {
    const name = node.property
    if (typeof name !== 'string') this.fail(node, path, '"property" must be a string')
    if (!Object.hasOwn(this.types, name)) {
      if (!this.queryables.attributes) this.fail(node, path, `unknown property ${JSON.stringify(name)}: the queryables are ${this.names}`)
      const attribute = name.startsWith(ATTRIBUTE_PREFIX) ? name.slice(ATTRIBUTE_PREFIX.length) : name
      const type = this.declared.get(attribute)
      if (type !== undefined) {
        const scalar = { attribute, as: type }
        return type === 'timestamp' ? { type, scalar, instant: scalar } : { type, scalar }
      }
      if (name.startsWith(ATTRIBUTE_PREFIX) && attribute.length > 0) {
        this.noNul(attribute, path)
        return { type: 'any', attribute, scalar: { attribute, as: 'string' } }
      }
      const declared = [...this.declared.keys()]
      this.fail(node, path, `unknown property ${JSON.stringify(name)}: the queryables are ${this.names}${declared.length > 0 ? `, and your organisation's declared attributes ${declared.join(', ')}` : ''}; any attribute is ${ATTRIBUTE_PREFIX}name`)
    }
    const property = name as Queryable
    const type = this.types[property]
    if (property === 'geometry') return { type: 'geometry', geom: { property }, degenerate: false }
    if (type === 'timestamp') {
      const p = property as InstantProperty
      return { type, scalar: { property: p }, instant: { property: p } }
    }
    return { type: type as 'string' | 'number' | 'boolean', scalar: { property: property as Exclude<Queryable, 'geometry'> } }
  }

  /** A DATE (midnight UTC: the day's first instant, as for `datetime`) or a TIMESTAMP, as RFC 3339 UTC. */
  private instant (node: Record<string, unknown>, path: string): string {
    const isDate = 'date' in node
    const value = isDate ? node.date : node.timestamp
    if (typeof value !== 'string' || !(isDate ? DATE : TIMESTAMP).test(value)) {
      this.fail(node, path, isDate ? 'a DATE is a full date such as 2024-05-01' : 'a TIMESTAMP is an RFC 3339 UTC date-time such as 2024-05-01T12:00:00Z')
    }
    return this.calendar(node, path, value)
  }

  private calendar (node: unknown, path: string, value: string): string {
    const parsed = parseDateTime(value)
    if (typeof parsed === 'string') this.fail(node, path, `${JSON.stringify(value)} ${parsed}`)
    return parsed.iso
  }

  private interval (node: Record<string, unknown>, path: string): Temporal {
    const ends = node.interval
    if (!Array.isArray(ends) || ends.length !== 2) this.fail(node, path, 'an INTERVAL has two ends: a date, a timestamp, \'..\' (open) or a property')
    const [begin, end] = ends.map((e, i): Instant => {
      if (e === '..') return { timestamp: i === 0 ? '-infinity' : 'infinity' }
      if (typeof e === 'string') {
        if (!DATE.test(e) && !TIMESTAMP.test(e)) this.fail(node, path, `${JSON.stringify(e)} is not an end of an INTERVAL: a date (2024-05-01), an RFC 3339 UTC timestamp (2024-05-01T12:00:00Z) or '..'`)
        return { timestamp: this.calendar(node, path, e) }
      }
      if (isObject(e) && 'property' in e) {
        const p = this.property(e, `${path}/interval/${i}`)
        if (p.type !== 'timestamp') this.fail(e, `${path}/interval/${i}`, `an end of an INTERVAL is an instant, and ${String(e.property)} is ${TYPE_NAMES[p.type]}`)
        return p.instant
      }
      this.fail(node, path, 'an end of an INTERVAL is a date, a timestamp, \'..\' or a timestamp property')
    }) as [Instant, Instant]
    if ('timestamp' in begin && 'timestamp' in end && begin.timestamp !== '-infinity' && end.timestamp !== 'infinity' && Date.parse(begin.timestamp) > Date.parse(end.timestamp)) {
      this.fail(node, path, 'the INTERVAL starts after it ends')
    }
    return { begin, end }
  }

  private temporal (node: unknown, path: string, depth: number, name: string): Temporal {
    const o = this.operand(node, path, depth)
    if (o.type === 'interval') return o.temporal
    if (o.type === 'timestamp') return { at: o.instant }
    const hint = typeof node === 'string' ? this.literalHint('timestamp', node) : `use a timestamp property (${this.instants}), ${this.periodHint}, ${this.text ? "DATE('…'), TIMESTAMP('…') or INTERVAL('…', '…')" : '{"date": …}, {"timestamp": …} or {"interval": […, …]}'}`
    this.fail(node, path, `${name} relates instants and intervals, and ${this.named(node, o.type)}: ${hint}`)
  }

  private bbox (node: Record<string, unknown>, path: string): Operand {
    const b = node.bbox
    if (!Array.isArray(b) || (b.length !== 4 && b.length !== 6) || !b.every((n) => typeof n === 'number')) {
      this.fail(node, path, 'a BBOX has 4 numbers (west, south, east, north) or 6 (with a bottom and a top)')
    }
    const [w, s, e, n] = (b.length === 4 ? b : [b[0], b[1], b[3], b[4]]) as [number, number, number, number]
    if (![w, s, e, n].every(Number.isFinite)) this.fail(node, path, 'a BBOX holds finite numbers')
    if ([w, e].some((x) => x < -180 || x > 180)) this.fail(node, path, 'a BBOX\'s longitudes lie in [-180, 180] (CRS84)')
    if ([s, n].some((y) => y < -90 || y > 90)) this.fail(node, path, 'a BBOX\'s latitudes lie in [-90, 90] (CRS84)')
    if (s > n) this.fail(node, path, `a BBOX's south (${s}) must not be above its north (${n})`)
    this.countVertices(node, path, 4)
    const boxes: SearchBox[] = searchBoxes(w + 0, s + 0, e + 0, n + 0)
    return { type: 'geometry', geom: { boxes }, degenerate: w === e || s === n }
  }

  private countVertices (node: unknown, path: string, n: number): void {
    this.vertices += n
    if (this.vertices > FILTER_LIMITS.vertices) this.fail(node, path, `geometry literals have more than the limit of ${FILTER_LIMITS.vertices} positions in all`)
  }

  private position (node: unknown, path: string): string {
    if (!Array.isArray(node) || node.length < 2 || node.length > 3 || !node.every((n) => typeof n === 'number')) {
      this.fail(node, path, 'a position is 2 numbers, longitude and latitude (a third, a height, is ignored)')
    }
    const [x, y] = node as [number, number]
    if (!Number.isFinite(x) || !Number.isFinite(y)) this.fail(node, path, 'a position holds finite numbers')
    if (x < -180 || x > 180 || y < -90 || y > 90) this.fail(node, path, `the position ${x} ${y} is outside CRS84 (longitude in [-180, 180], latitude in [-90, 90])`)
    this.countVertices(node, path, 1)
    return `${x + 0} ${y + 0}`
  }

  private positions (node: unknown, path: string, min: number, what: string): string[] {
    if (!Array.isArray(node) || node.length < min) this.fail(node, path, `${what} has at least ${min} positions`)
    return node.map((p, i) => this.position(p, `${path}/${i}`))
  }

  private rings (node: unknown, path: string): string {
    if (!Array.isArray(node) || node.length === 0) this.fail(node, path, 'a polygon has at least one ring')
    return `(${node.map((ring: unknown, r) => {
      const at = `${path}/${r}`
      const positions = this.positions(ring, at, 4, `ring ${r} of a polygon`)
      if (positions[0] !== positions.at(-1)) this.fail(ring, at, `ring ${r} of a polygon is not closed: its last position must repeat its first`)
      return `(${positions.join(',')})`
    }).join(',')})`
  }

  private list (node: unknown, path: string, what: string): unknown[] {
    if (!Array.isArray(node) || node.length === 0) this.fail(node, path, `${what} has at least one member`)
    return node
  }

  /** WKT of a GeoJSON geometry, checked. */
  private wkt (node: Record<string, unknown>, path: string, inCollection: boolean): string {
    const c = node.coordinates
    const at = `${path}/coordinates`
    switch (node.type) {
      case 'Point': return `POINT(${this.position(c, at)})`
      case 'LineString': return `LINESTRING(${this.positions(c, at, 2, 'a line string').join(',')})`
      case 'Polygon': return `POLYGON${this.rings(c, at)}`
      case 'MultiPoint': return `MULTIPOINT(${this.list(c, at, 'a MultiPoint').map((p, i) => `(${this.position(p, `${at}/${i}`)})`).join(',')})`
      case 'MultiLineString': return `MULTILINESTRING(${this.list(c, at, 'a MultiLineString').map((l, i) => `(${this.positions(l, `${at}/${i}`, 2, 'a line string').join(',')})`).join(',')})`
      case 'MultiPolygon': return `MULTIPOLYGON(${this.list(c, at, 'a MultiPolygon').map((p, i) => this.rings(p, `${at}/${i}`)).join(',')})`
      case 'GeometryCollection': {
        if (inCollection) this.fail(node, path, 'a GeometryCollection cannot hold another')
        const members = this.list(node.geometries, `${path}/geometries`, 'a GeometryCollection')
        return `GEOMETRYCOLLECTION(${members.map((g, i) => {
          if (!isObject(g)) this.fail(g, `${path}/geometries/${i}`, 'a member of a GeometryCollection is a geometry')
          return this.wkt(g, `${path}/geometries/${i}`, true)
        }).join(',')})`
      }
      default: this.fail(node, path, `${JSON.stringify(node.type)} is not a geometry type: Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon or GeometryCollection`)
    }
  }

  private geometry (node: Record<string, unknown>, path: string): Operand {
    const wkt = this.wkt(node, path, false)
    // Points cannot be invalid once their numbers are; lines and polygons go to PostGIS's ST_IsValid.
    if (node.type !== 'Point' && node.type !== 'MultiPoint') this.geometries.push(wkt)
    return { type: 'geometry', geom: { wkt }, degenerate: false }
  }
}

type ScalarOperand = Extract<Operand, { scalar: Scalar }>
type GeometryOperand = Extract<Operand, { type: 'geometry' }>

/** The deepest nesting of brackets outside string literals ('…' in text, "…" in JSON). */
function bracketDepth (text: string, quote: '\'' | '"', open: string, close: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (inString) {
      if (c === '\\') i++
      else if (c === quote) inString = false
    } else if (c === quote) inString = true
    else if (open.includes(c)) max = Math.max(max, ++depth)
    else if (close.includes(c)) depth--
  }
  return max
}

/**
 * A filter's text checked into a FilterExpr, or the one message saying why not. The parsers
 * recurse on brackets, so brackets nested far beyond the depth limit are refused before parsing.
 */
export function checkFilter (filter: string, lang: typeof FILTER_LANGS[number], declared: ReadonlyMap<string, AttributeType> = new Map(), queryables: FilterQueryables = SOURCE_QUERYABLES): CheckedFilter | { error: string } {
  if (filter.length > FILTER_LIMITS.characters) return { error: `is ${filter.length} characters long: the limit is ${FILTER_LIMITS.characters}` }
  const text = lang === 'cql2-text'
  const brackets = text ? bracketDepth(filter, '\'', '(', ')') : bracketDepth(filter, '"', '[{', ']}')
  if (brackets > 2 * FILTER_LIMITS.depth) return { error: `nests deeper than the limit of ${FILTER_LIMITS.depth} levels` }
  let json: unknown
  if (text) {
    const parsed = parseCql2Text(filter)
    if ('syntax' in parsed) {
      const { offset, line, column, message } = parsed.syntax
      return { error: `is not CQL2 text: at character ${offset + 1} (line ${line}, column ${column}): ${message}` }
    }
    json = parsed.json
  } else {
    try {
      json = JSON.parse(filter)
    } catch (error) {
      return { error: `is not JSON (cql2-json): ${(error as Error).message}` }
    }
  }
  const checker = new Checker(text, declared, queryables)
  try {
    return { expr: checker.predicate(json, '', 1), geometries: checker.geometries }
  } catch (error) {
    if (error instanceof FilterError) return { error: error.message }
    throw error
  }
}
