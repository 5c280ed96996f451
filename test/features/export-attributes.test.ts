// Attributes that vary from source to source keep every value in the table-shaped exports (CSV,
// FlatGeobuf), whose columns are named before their rows: an attribute only a later source
// holds still gets its column, and one whose values are of several JSON types gets a column that
// holds them all (a number beside a string: a string column; an object: a JSON column). The
// CLI's export reads the attributes' types first (sources.listing.ts attributeTypesQuery); read
// back with the flatgeobuf package, GDAL where installed, and as CSV.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { sql } from 'kysely'
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js'
import { openDatabase } from '../../src/db/open.js'
import { exportSources } from '../../src/features/bulk.js'
import { columnsOf, columnsOfTypes, widerKind } from '../../src/features/formats/columns.js'
import { crsCatalogue } from '../../src/sources/crs.js'
import { sourceStore } from '../../src/sources/sources.store.js'
import { addAccount, createDatabase, targetConfig, tempDir } from '../helper.js'

t.test('the columns of Features whose attributes vary', async (t) => {
  t.equal(widerKind(undefined, 'number'), 'number', 'null says nothing')
  t.equal(widerKind('number', 'string'), 'string', 'scalars of two kinds: a string')
  t.equal(widerKind('boolean', 'number'), 'string')
  t.equal(widerKind('string', 'json'), 'json', 'an object or an array: JSON')
  const features = [
    { type: 'Feature' as const, id: 'a', geometry: null, properties: { start_at: 's', a: 1, n: null } },
    { type: 'Feature' as const, id: 'b', geometry: null, properties: { start_at: 's', a: 'x', later: true, n: null } }
  ]
  const columns = columnsOf(features)
  const kinds = Object.fromEntries(columns.map((c) => [c.name, c.kind]))
  t.equal(kinds.start_at, 'timestamp', 'a property by the registry')
  t.same([kinds.a, kinds.later, kinds.n], ['string', 'boolean', 'json'], 'attributes by all their values (only nulls: JSON)')
  t.ok(columns.findIndex((c) => c.name === 'later') > columns.findIndex((c) => c.name === 'a'), 'in the order first met')
  t.same(columnsOfTypes([{ name: 'a', types: ['number', 'string'] }, { name: 'o', types: ['null', 'object'] }, { name: 'z', types: ['null'] }]),
    [{ name: 'a', kind: 'string' }, { name: 'o', kind: 'json' }, { name: 'z', kind: 'json' }], 'the same from jsonb_typeof\'s names')
  t.same(columnsOf([], [{ name: 'given', kind: 'number' }]).at(-1), { name: 'given', kind: 'number' }, 'attributes known before the Features')
})

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
t.teardown(() => db.destroy())
const editor = await addAccount(db, { role: 'editor', organisation: 'org-h' })
const dir = await tempDir(t, 'sr-export-attributes-')

// 12 sources, read 3 to a query: the first holds `a` (a number), `j` (an object), and `geometry`
// and `id` (names the registry has but never returns as properties: attributes); later ones
// bring `a` as a string, `late`, `j` as an array, `flag` as a boolean then a string, and `only9`
// in the last range alone.
const attributes: Record<number, Record<string, unknown>> = {
  0: { a: 1, j: { k: 0 }, geometry: 'g0', id: 'i0' },
  1: { a: 2.5 },
  5: { a: 'five', late: true },
  9: { only9: 'nine', j: [1, 2] },
  10: { flag: true },
  11: { flag: 'yes' }
}
for (let n = 0; n < 12; n++) {
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period, attributes)
    VALUES (${`src_att${String(n).padStart(10, '0')}`}, ${`h-${n}`}, 'org-h', ${editor.id}::uuid, ST_MakeEnvelope(${n}, 0, ${n + 0.5}, 0.5, 4326),
      tstzrange('2024-01-01Z', '2025-01-01Z'), ${JSON.stringify(attributes[n] ?? {})}::jsonb)`.execute(db)
}

const exportTo = async (format: 'fgb' | 'csv', name: string): Promise<string> => {
  const to = join(dir, name)
  await exportSources(sourceStore(db), { organisation: 'org-h' }, { format, to, catalogue: crsCatalogue([]), rowsPerQuery: 3 }, () => ({ done: () => {} }))
  return to
}

// What each source's attributes are in a column of the kind chosen: a string column holds the
// other values as their JSON text.
const asString = (v: unknown): string => typeof v === 'string' ? v : JSON.stringify(v)
const expected = (n: number): Record<string, unknown> => {
  const a = attributes[n] ?? {}
  const out: Record<string, unknown> = {}
  if ('a' in a) out.a = asString(a.a)
  if ('j' in a) out.j = a.j
  if ('late' in a) out.late = a.late
  if ('only9' in a) out.only9 = a.only9
  if ('flag' in a) out.flag = asString(a.flag)
  if ('geometry' in a) out.geometry = a.geometry
  return out
}

t.test('FlatGeobuf: every attribute of every source, each column holding all its values', async (t) => {
  const file = await exportTo('fgb', 'varied.fgb')
  const stream = Readable.toWeb(createReadStream(file)) as unknown as Parameters<typeof deserialize>[0]
  const byFeatureId = new Map<string, Record<string, unknown>>()
  for await (const f of deserialize(stream) as AsyncGenerator<{ properties: Record<string, unknown> }>) byFeatureId.set(f.properties.feature_id as string, f.properties)
  t.equal(byFeatureId.size, 12)
  for (let n = 0; n < 12; n++) {
    const p = byFeatureId.get(`h-${n}`) ?? {}
    const got = Object.fromEntries(['a', 'j', 'late', 'only9', 'flag', 'geometry'].filter((k) => Object.hasOwn(p, k)).map((k) => [k, p[k]]))
    t.same(got, expected(n), `h-${n}: its attributes`)
  }
  if (spawnSync('ogrinfo', ['--version']).status === 0) {
    const info = spawnSync('ogrinfo', ['-ro', '-al', '-so', file], { encoding: 'utf8' }).stdout
    t.match(info, /\na: String/, 'GDAL: a number beside a string, a String field')
    t.match(info, /\nlate: Integer\(Boolean\)/, 'a boolean first met in a later range')
    t.match(info, /\nonly9: String/, 'an attribute of the last range alone')
    t.match(info, /\nflag: String/, 'a boolean beside a string')
    t.match(info, /\nj: String/, 'an object beside an array: a JSON column (GDAL 3.6 lists it as a String)')
    t.equal(info.match(/\ngeometry: /g)?.length, 1, 'one geometry column (the attribute\'s)')
    t.equal(info.match(/\nid: /g)?.length, 1, 'one id column (the Feature\'s: an attribute named id is not one)')
  }
})

t.test('CSV: a column for every attribute, however late it comes', async (t) => {
  const text = await readFile(await exportTo('csv', 'varied.csv'), 'utf8')
  const [header, ...rows] = text.split('\r\n').filter((l) => l !== '')
  const names = (header as string).split(',')
  for (const name of ['a', 'j', 'late', 'only9', 'flag']) t.ok(names.includes(name), `a ${name} column`)
  t.equal(names.filter((n) => n === 'geometry').length, 1, 'one geometry column (the attribute\'s)')
  t.equal(names.filter((n) => n === 'id').length, 2, 'the Feature\'s id, then the attribute named id')
  const cell = (n: number, name: string): string | undefined => {
    const row = rows.find((r) => r.includes(`,h-${n},`))
    // No quoted field holds a comma in these rows but j's JSON: read j last, by its quotes.
    if (row === undefined) return undefined
    if (name === 'j') return /"(\{.*\}|\[.*\])"/.exec(row)?.[1]?.replaceAll('""', '"')
    return row.replace(/"[^"]*(""[^"]*)*"/g, 'J').split(',')[names.indexOf(name)]
  }
  t.equal(cell(0, 'a'), '1')
  t.equal(cell(5, 'a'), 'five')
  t.equal(cell(5, 'late'), 'true')
  t.equal(cell(9, 'only9'), 'nine', 'an attribute of the last range alone')
  t.equal(cell(11, 'flag'), 'yes')
  t.equal(cell(0, 'j'), '{"k":0}', 'an object as its JSON')
  t.equal(cell(9, 'j'), '[1,2]')
})
