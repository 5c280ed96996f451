// The CQL2 Text encoding (OGC 21-065r2, Annex B BNF) as a peggy grammar, compiled once, when
// the first filter is read (not at start-up, which it lengthened: docs/performance.md). It
// produces CQL2 JSON (the same objects a cql2-json filter holds), so one checker (cql2.ts)
// types and limits both encodings. Differences from the BNF, each on purpose:
// - a predicate is read as an operand followed by what may follow one (a comparison, LIKE,
//   BETWEEN, IN, IS NULL), so no alternative is parsed twice;
// - NOT in front of a predicate repeats without recursion (NOT NOT … is a loop, not a stack);
// - arithmetic is not part of the grammar (the Arithmetic class is not implemented);
// - MULTIPOINT also takes its points without their own parentheses, as most WKT writers send it.
// Keywords are case-insensitive; a property named like one is written in double quotes.
import peggy from 'peggy'

const GRAMMAR = String.raw`
{{
  // Built once with the parser, not on every parse (they were a large share of a short
  // filter's parse: docs/performance.md); the block after this one runs on every parse.
  function fold (op, head, tail) { return tail.length === 0 ? head : { op, args: [head, ...tail] } }
  function negate (not, node) { return not ? { op: 'not', args: [node] } : node }
  const ESCAPES = { "'": "'", '\\': '\\', a: '\x07', b: '\b', t: '\t', n: '\n', v: '\v', f: '\f', r: '\r' }
  const FUNCTIONS = new Map([
    's_intersects', 's_equals', 's_disjoint', 's_touches', 's_within', 's_overlaps', 's_crosses', 's_contains',
    't_after', 't_before', 't_contains', 't_disjoint', 't_during', 't_equals', 't_finishedBy', 't_finishes',
    't_intersects', 't_meets', 't_metBy', 't_overlappedBy', 't_overlaps', 't_startedBy', 't_starts',
    'a_equals', 'a_contains', 'a_containedBy', 'a_overlaps', 'casei', 'accenti'
  ].map((name) => [name.toLowerCase(), name]))
  const KEYWORDS = new Set(['A_EQUALS', 'A_CONTAINS', 'A_CONTAINEDBY', 'A_OVERLAPS', 'ACCENTI', 'AND', 'BBOX',
    'BETWEEN', 'CASEI', 'DATE', 'DIV', 'FALSE', 'GEOMETRYCOLLECTION', 'IN', 'INTERVAL', 'IS', 'LIKE', 'LINESTRING',
    'MULTILINESTRING', 'MULTIPOINT', 'MULTIPOLYGON', 'NOT', 'NULL', 'OR', 'POINT', 'POLYGON', 'S_INTERSECTS',
    'S_EQUALS', 'S_DISJOINT', 'S_TOUCHES', 'S_WITHIN', 'S_OVERLAPS', 'S_CROSSES', 'S_CONTAINS', 'T_AFTER',
    'T_BEFORE', 'T_CONTAINS', 'T_DISJOINT', 'T_DURING', 'T_EQUALS', 'T_FINISHEDBY', 'T_FINISHES', 'T_INTERSECTS',
    'T_MEETS', 'T_METBY', 'T_OVERLAPPEDBY', 'T_OVERLAPS', 'T_STARTEDBY', 'T_STARTS', 'TIMESTAMP', 'TRUE'])
  // Keywords that are not function names: POINT(1) is a bad point, not an unknown function.
  const NOT_FUNCTIONS = new Set([...KEYWORDS].filter((k) => !/^[AST]_|^CASEI$|^ACCENTI$/.test(k)))
}}
{
  const at = options.at
  function mark (node) { if (at !== undefined) node[at] = offset(); return node }
  function number (text) {
    if (options.template) return { [options.template]: offset(), length: text.length }
    const n = Number(text)
    if (!Number.isFinite(n)) error('the number ' + text + ' is out of range (beyond ±1.8e308)')
    return n + 0
  }
}

Filter = _ @BooleanExpression _

BooleanExpression = head:BooleanTerm tail:(_ OR _ @BooleanTerm)* { return fold('or', head, tail) }

BooleanTerm = head:BooleanFactor tail:(_ AND _ @BooleanFactor)* { return fold('and', head, tail) }

BooleanFactor = nots:(NOT _)* primary:BooleanPrimary {
  let node = primary
  for (let i = 0; i < nots.length; i++) node = { op: 'not', args: [node] }
  return node
}

BooleanPrimary
  = "(" _ @BooleanExpression _ ")"
  / operand:Operand rest:PredicateRest? { return rest === null ? operand : rest(operand) }

PredicateRest
  = _ op:ComparisonOperator _ right:Operand { return (left) => ({ op, args: [left, right] }) }
  / _ not:(NOT _)? LIKE _ pattern:Operand { return (left) => negate(not, { op: 'like', args: [left, pattern] }) }
  / _ not:(NOT _)? BETWEEN _ low:Operand _ AND _ high:Operand { return (left) => negate(not, { op: 'between', args: [left, low, high] }) }
  / _ not:(NOT _)? IN _ "(" _ list:OperandList _ ")" { return (left) => negate(not, { op: 'in', args: [left, list] }) }
  / _ IS _ not:(NOT _)? NULL { return (left) => negate(not, { op: 'isNull', args: [left] }) }

ComparisonOperator "comparison operator" = "<>" / "<=" / ">=" / "=" / "<" / ">"

OperandList = head:Operand tail:(_ "," _ @Operand)* { return [head, ...tail] }

Operand
  = CharacterLiteral
  / NumericLiteral
  / TemporalLiteral
  / SpatialLiteral
  / BooleanLiteral
  / FunctionCall
  / PropertyName

FunctionCall = name:Name &{ return !NOT_FUNCTIONS.has(name.toUpperCase()) } _ "(" _ args:ArgumentList? _ ")" {
  return mark({ op: FUNCTIONS.get(name.toLowerCase()) ?? name, args: args ?? [] })
}

ArgumentList = head:Argument tail:(_ "," _ @Argument)* { return [head, ...tail] }

Argument = Operand / Array

Array = "(" _ items:ArgumentList? _ ")" { return items ?? [] }

PropertyName "a property name"
  = !Keyword name:Name { return mark({ property: name }) }
  / '"' name:$[^"]+ '"' { return mark({ property: name }) }

Keyword = word:Name &{ return KEYWORDS.has(word.toUpperCase()) }

Name "a function name" = $(IdentifierStart IdentifierPart*)

IdentifierStart = [:_A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFE\u200C-\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\u{10000}-\u{EFFFF}]u

IdentifierPart = IdentifierStart / [.0-9\u0300-\u036F\u203F-\u2040]

CharacterLiteral "a character string in single quotes"
  = "'" chars:StringCharacter* "'" { return chars.join('') }

StringCharacter
  = "''" { return "'" }
  / "\\" c:. { return ESCAPES[c] ?? '\\' + c }
  / [^'\\]

NumericLiteral "a number" = text:$([+-]? UnsignedNumber) { return number(text) }

UnsignedNumber = (Digits ("." Digits?)? / "." Digits) ([eE] [+-]? Digits)?

Digits = [0-9]+

BooleanLiteral "TRUE or FALSE" = TRUE { return true } / FALSE { return false }

TemporalLiteral
  = DATE _ "(" _ date:CharacterLiteral _ ")" { return mark({ date }) }
  / TIMESTAMP _ "(" _ timestamp:CharacterLiteral _ ")" { return mark({ timestamp }) }
  / INTERVAL _ "(" _ start:IntervalEnd _ "," _ end:IntervalEnd _ ")" { return mark({ interval: [start, end] }) }

IntervalEnd = CharacterLiteral / FunctionCall / PropertyName

SpatialLiteral = GeometryLiteral / GeometryCollection / Bbox

GeometryLiteral
  = POINT Dimension? _ coordinates:PointText { return mark({ type: 'Point', coordinates }) }
  / LINESTRING Dimension? _ coordinates:PointList { return mark({ type: 'LineString', coordinates }) }
  / POLYGON Dimension? _ coordinates:PointListList { return mark({ type: 'Polygon', coordinates }) }
  / MULTIPOINT Dimension? _ "(" _ head:MultiPointMember tail:(_ "," _ @MultiPointMember)* _ ")" { return mark({ type: 'MultiPoint', coordinates: [head, ...tail] }) }
  / MULTILINESTRING Dimension? _ coordinates:PointListList { return mark({ type: 'MultiLineString', coordinates }) }
  / MULTIPOLYGON Dimension? _ "(" _ head:PointListList tail:(_ "," _ @PointListList)* _ ")" { return mark({ type: 'MultiPolygon', coordinates: [head, ...tail] }) }

GeometryCollection = GEOMETRYCOLLECTION Dimension? _ "(" _ head:GeometryLiteral tail:(_ "," _ @GeometryLiteral)* _ ")" {
  return mark({ type: 'GeometryCollection', geometries: [head, ...tail] })
}

Bbox = BBOX _ "(" _ head:NumericLiteral tail:(_ "," _ @NumericLiteral)* _ ")" { return mark({ bbox: [head, ...tail] }) }

Dimension = _ ("ZM"i / "Z"i / "M"i) !IdentifierPart

PointText = "(" _ @Point _ ")"

MultiPointMember = PointText / Point

Point = x:NumericLiteral Space y:NumericLiteral z:(Space @NumericLiteral)? { return z === null ? [x, y] : [x, y, z] }

PointList = "(" _ head:Point tail:(_ "," _ @Point)* _ ")" { return [head, ...tail] }

PointListList = "(" _ head:PointList tail:(_ "," _ @PointList)* _ ")" { return [head, ...tail] }

AND = "AND"i !IdentifierPart
OR = "OR"i !IdentifierPart
NOT = "NOT"i !IdentifierPart
LIKE = "LIKE"i !IdentifierPart
BETWEEN = "BETWEEN"i !IdentifierPart
IN = "IN"i !IdentifierPart
IS = "IS"i !IdentifierPart
NULL = "NULL"i !IdentifierPart
TRUE = "TRUE"i !IdentifierPart
FALSE = "FALSE"i !IdentifierPart
DATE = "DATE"i !IdentifierPart
TIMESTAMP = "TIMESTAMP"i !IdentifierPart
INTERVAL = "INTERVAL"i !IdentifierPart
BBOX = "BBOX"i !IdentifierPart
POINT = "POINT"i !IdentifierPart
LINESTRING = "LINESTRING"i !IdentifierPart
POLYGON = "POLYGON"i !IdentifierPart
MULTIPOINT = "MULTIPOINT"i !IdentifierPart
MULTILINESTRING = "MULTILINESTRING"i !IdentifierPart
MULTIPOLYGON = "MULTIPOLYGON"i !IdentifierPart
GEOMETRYCOLLECTION = "GEOMETRYCOLLECTION"i !IdentifierPart

Space "a space before the next coordinate" = WhiteSpace+

_ = WhiteSpace*

WhiteSpace "white space" = [\t\n\v\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]
`

/** Where a node came from in the text (a character offset), kept beside its CQL2 JSON. */
export const TEXT_OFFSET = Symbol('offset')

let generated: peggy.Parser | undefined
const grammarParser = (): peggy.Parser => (generated ??= peggy.generate(GRAMMAR))

/** A peggy syntax error: where, and what was expected there. */
export interface Cql2SyntaxError { offset: number, line: number, column: number, message: string }

/** What was expected where the parse stopped (white space only when nothing else would do), and what was found. */
function describe (error: peggy.parser.SyntaxError): string {
  if (error.expected === null) return error.message
  const all = [...new Set(error.expected.map((e) => e.type === 'literal' ? JSON.stringify(e.text) : e.type === 'end' ? 'the end' : e.type === 'other' ? e.description : 'a character'))]
  const named = all.length > 1 ? all.filter((e) => e !== 'white space') : all
  const found = error.found === null ? 'the end of the filter' : JSON.stringify(error.found)
  return `expected ${named.length === 1 ? '' : 'one of '}${named.join(', ')}; found ${found}`
}

/** The text parsed into CQL2 JSON (nodes carry TEXT_OFFSET), or where it stops making sense. */
export function parseCql2Text (text: string): { json: unknown } | { syntax: Cql2SyntaxError } {
  return fromTemplate(text) ?? parseWhole(text)
}

/** The text parsed as it stands, without templates (what parseCql2Text must equal). */
export function parseWhole (text: string): { json: unknown } | { syntax: Cql2SyntaxError } {
  try {
    return { json: grammarParser().parse(text, { at: TEXT_OFFSET }) as unknown }
  } catch (error) {
    if (error instanceof grammarParser().SyntaxError) {
      const { start } = error.location
      return { syntax: { offset: start.offset, line: start.line, column: start.column, message: describe(error) } }
    }
    throw error
  }
}

// Templates. A filter's numbers do not change how it parses, and clients send the same filter
// again and again with other numbers (a map panning: the same S_INTERSECTS with another BBOX).
// A peggy parse builds its tables and rule functions anew on every call, so a filter is parsed
// once per template: its numbers replaced by zeros of the same length (every offset stays where
// it was), parsed with each number left as a mark of where it stood, and each filter of that
// template only copies the result with its own numbers put in.
// A template is used only when the marks are exactly the numbers replaced; anything else (a
// number inside a name or a string, one out of range, a syntax error) is parsed whole.
const NUMBER_AT = Symbol('number at')
type NumberMark = { [NUMBER_AT]: number, length: number }
const NUMBER = /[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y
const TEMPLATES_MAX = 256
const TEMPLATE_CHARACTERS_MAX = 2048
const templates = new Map<string, { json: unknown, marks: number } | null>()

/** The numbers of a text outside quotes and names, by offset; the text with each replaced by zeros. */
function numbersOf (text: string): { template: string, numbers: Map<number, string> } {
  const numbers = new Map<number, string>()
  let template = ''
  let from = 0
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === 0x27 || c === 0x22) { // a string, or a quoted name: to its closing quote ('' and \' stay inside)
      i++
      while (i < text.length && text.charCodeAt(i) !== c) i += text.charCodeAt(i) === 0x5c ? 2 : 1
      i++
    } else if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x3a || c >= 0x80) {
      // A name, with every character that may continue one (digits and dots too).
      i++
      while (i < text.length) {
        const d = text.charCodeAt(i)
        if ((d >= 0x30 && d <= 0x3a) || (d >= 0x41 && d <= 0x5a) || (d >= 0x61 && d <= 0x7a) || d === 0x5f || d === 0x2e || d >= 0x80) i++
        else break
      }
    } else {
      NUMBER.lastIndex = i
      const m = NUMBER.exec(text)
      if (m === null) { i++; continue }
      numbers.set(i, m[0])
      template += text.slice(from, i) + '0'.repeat(m[0].length)
      i += m[0].length
      from = i
    }
  }
  return { template: template + text.slice(from), numbers }
}

function fromTemplate (text: string): { json: unknown } | undefined {
  if (text.length > TEMPLATE_CHARACTERS_MAX) return undefined
  const { template, numbers } = numbersOf(text)
  if (numbers.size === 0) return undefined
  let entry = templates.get(template)
  if (entry === undefined) {
    try {
      const json = grammarParser().parse(template, { at: TEXT_OFFSET, template: NUMBER_AT }) as unknown
      entry = { json, marks: countMarks(json) }
    } catch {
      entry = null // not CQL2 as it stands: parsed whole, for the error's place and words
    }
    if (templates.size >= TEMPLATES_MAX) templates.delete(templates.keys().next().value as string)
    templates.set(template, entry)
  }
  if (entry === null || entry.marks !== numbers.size) return undefined
  const filled = fill(entry.json, numbers)
  return filled === MISMATCH ? undefined : { json: filled }
}

const MISMATCH = Symbol('mismatch')
const isMark = (node: object): node is NumberMark => NUMBER_AT in node

function countMarks (node: unknown): number {
  if (node === null || typeof node !== 'object') return 0
  if (isMark(node)) return 1
  let n = 0
  for (const v of Array.isArray(node) ? node : Object.values(node)) n += countMarks(v)
  return n
}

/** A copy of a template's JSON with each mark replaced by the number at its offset; MISMATCH when a mark is not one of them. */
function fill (node: unknown, numbers: Map<number, string>): unknown {
  if (node === null || typeof node !== 'object') return node
  if (isMark(node)) {
    const text = numbers.get(node[NUMBER_AT])
    if (text?.length !== node.length) return MISMATCH
    const n = Number(text)
    return Number.isFinite(n) ? n + 0 : MISMATCH
  }
  if (Array.isArray(node)) {
    const out = new Array<unknown>(node.length)
    for (let i = 0; i < node.length; i++) {
      const v = fill(node[i], numbers)
      if (v === MISMATCH) return MISMATCH
      out[i] = v
    }
    return out
  }
  const out: Record<string | symbol, unknown> = {}
  for (const key in node) {
    const v = fill((node as Record<string, unknown>)[key], numbers)
    if (v === MISMATCH) return MISMATCH
    out[key] = v
  }
  const at = (node as Record<symbol, unknown>)[TEXT_OFFSET]
  if (at !== undefined) out[TEXT_OFFSET] = at
  return out
}
