// seqRecords splits PostgreSQL's comma-joined Feature texts into GeoJSONSeq/NDJSON records by
// scanning, not parsing: every record must be exactly one of the texts, whatever strings and
// nesting the properties hold (commas, quotes, backslashes, brackets and line breaks inside
// strings; arrays of objects in an attribute; PostgreSQL's spacing between tokens).
import t, { type Test } from 'tap'
import { seqRecords } from '../../src/features/formats/text-formats.js'

const records = (t: Test, joined: string, rs: boolean): unknown[] => {
  const { text } = seqRecords(joined, rs)
  t.ok(text.endsWith('\n'), 'ends with a line feed')
  return text.slice(0, -1).split('\n').map((line) => {
    if (rs) t.equal(line[0], '\u001e', 'RS first')
    return JSON.parse(rs ? line.slice(1) : line) as unknown
  })
}

t.test('hostile strings and nesting', async (t) => {
  const features = [
    { type: 'Feature', id: 'a,"b"\\', geometry: null, properties: { s: '},{"type":"Feature"', q: '\\"', n: 'line\nbreak', u: 'é ∑ 😀' } },
    { type: 'Feature', id: 'x', geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] }, properties: { list: [{ type: 'Feature' }, { a: [1, [2, { b: ',' }]] }], empty: {}, none: [] } },
    { type: 'Feature', id: 'ends with backslash \\', geometry: null, properties: {} }
  ]
  for (const rs of [true, false]) {
    t.same(records(t, features.map((f) => JSON.stringify(f)).join(','), rs), features, `JSON.stringify's texts, rs ${String(rs)}`)
    // PostgreSQL's json_build_object and jsonb::text put spaces between tokens.
    // (The replacement reaches into strings too: what each text parses to is the expectation.)
    const spaced = features.map((f) => JSON.stringify(f).replace(/":/g, '" : ').replace(/,"/g, ', "'))
    t.same(records(t, spaced.join(','), rs), spaced.map((s) => JSON.parse(s) as unknown), `spaced texts, rs ${String(rs)}`)
  }
  t.equal(seqRecords(features.map((f) => JSON.stringify(f)).join(','), true).count, 3)
  t.same(seqRecords('', true), { text: '', count: 0 }, 'no Features: nothing')
})

t.test('random values', async (t) => {
  let seed = 7
  // Park–Miller (its products stay below 2^53, exact in doubles).
  const random = (): number => { seed = (seed * 48271) % 2147483647; return seed / 2147483647 }
  const alphabet = ['a', ',', '"', '\\', '{', '}', '[', ']', '\n', ':', ' ', '\u001e', 'é']
  const text = (): string => Array.from({ length: Math.floor(random() * 8) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
  const value = (depth: number): unknown => {
    const k = Math.floor(random() * (depth > 3 ? 3 : 5))
    if (k === 0) return text()
    if (k === 1) return random() * 1e6 - 5e5
    if (k === 2) return random() < 0.5 ? null : true
    if (k === 3) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))
    return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [text(), value(depth + 1)]))
  }
  for (let i = 0; i < 200; i++) {
    const features = Array.from({ length: 1 + Math.floor(random() * 5) }, () => ({ type: 'Feature', id: text(), geometry: null, properties: { v: value(0) } }))
    const got = records(t, features.map((f) => JSON.stringify(f)).join(','), i % 2 === 0)
    if (JSON.stringify(got) !== JSON.stringify(features)) { t.fail(`case ${i}: ${JSON.stringify(features)}`); return }
  }
  t.pass('200 random chunks split into their Features')
})
