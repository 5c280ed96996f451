// Binary COPY (db/copy-binary.ts), the FlatGeobuf export's way to read rows on the server
// backend: the parameters written into the statement as literals must mean what they meant as
// parameters (a quote, a backslash, a non-ASCII string, numbers, booleans, NULL; anything else
// is not inlined), and the rows parsed from PostgreSQL's own output must hold each field's bytes
// in its type's binary form, NULLs included; a $n inside a literal stays text. A timestamptz's
// binary form is written as the API writes an instant (flatgeobuf.ts writeIsoUtc), held to
// PostgreSQL's to_char over a spread of instants, years BC and after 9999 among them. Parsing and inlining run on both backends; the COPY itself on the server backend.
import t from 'tap'
import { CompiledQuery, sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { canCopy, copyBinary, inlineParameters, parseBinaryCopy } from '../../src/db/copy-binary.js'
import { isoUtcTrimmed } from '../../src/db/postgis.js'
import { writeIsoUtc } from '../../src/features/formats/flatgeobuf.js'
import { backend, createDatabase, targetConfig } from '../helper.js'

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
t.teardown(() => db.destroy())

const tricky = ['O\'Brien', 'back\\slash', 'naïve ✓', '', '$1', 'two\nlines']

t.test('inlined parameters mean what they meant as parameters', async (t) => {
  const text = 'SELECT $1::text AS a, $2::text AS b, $3::text AS c, $4::text AS d, $5::text AS e, $6::text AS f, $7::int8 + 1 AS n, $8::float8 AS x, $9::bool AS yes, $10::text AS none'
  const parameters = [...tricky, 41, 1.5, true, null]
  const inlined = inlineParameters(text, parameters)
  t.ok(inlined !== undefined && !/\$\d/.test(inlined.replace(/'(?:[^']|'')*'/g, '')), 'no placeholder left outside a literal')
  const viaParameters = (await db.executeQuery(CompiledQuery.raw(text, parameters))).rows[0]
  const viaLiterals = (await sql.raw(inlined as string).execute(db)).rows[0]
  t.same(viaLiterals, viaParameters, 'the same row')
  t.same(viaParameters, { a: tricky[0], b: tricky[1], c: tricky[2], d: '', e: '$1', f: 'two\nlines', n: '42', x: 1.5, yes: true, none: null })
})

t.test('a $n inside a literal or an identifier is text, not a placeholder', async (t) => {
  // A CQL2 filter's attribute name is written into the statement as a literal (filter.sql.ts).
  const text = 'SELECT \'a$1\' AS "b$2", \'it\'\'s $1\' AS c, $1::text AS d, "b$2" FROM (SELECT 1 AS "b$2") AS x'
  const inlined = inlineParameters(text, ['||(SELECT 1)||'])
  t.equal(inlined, 'SELECT \'a$1\' AS "b$2", \'it\'\'s $1\' AS c, \'||(SELECT 1)||\'::text AS d, "b$2" FROM (SELECT 1 AS "b$2") AS x')
  t.same((await sql.raw(inlined as string).execute(db)).rows[0], { b$2: 1, c: 'it\'s $1', d: '||(SELECT 1)||' }, 'runs as the text says')
  t.equal(inlineParameters('SELECT \'open', []), undefined, 'an unclosed literal')
  t.equal(inlineParameters('SELECT E\'a\\\'b\' || $1', ['x']), undefined, 'an E\'\' string (Kysely writes none)')
})

t.test('what is not inlined', async (t) => {
  t.equal(inlineParameters('SELECT $1', [new Date()]), undefined, 'a Date (pg chooses its text)')
  t.equal(inlineParameters('SELECT $1', [Buffer.from('x')]), undefined, 'a Buffer (sent as binary)')
  t.equal(inlineParameters('SELECT $1', [['a']]), undefined, 'an array')
  t.equal(inlineParameters('SELECT $1', [Number.NaN]), undefined, 'NaN')
  t.equal(inlineParameters('SELECT $2', ['a']), undefined, 'a placeholder without its parameter')
  t.equal(inlineParameters('SELECT $$a$$ || $1', ['a']), undefined, 'dollar quotes')
})

t.test('a truncated or foreign COPY output is refused', async (t) => {
  t.throws(() => parseBinaryCopy(Buffer.from('id\tname\n1\tx\n')), /not a binary COPY/)
  const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
  const row = Buffer.from([0, 1, 0, 0, 0, 9, 0x61])
  t.throws(() => parseBinaryCopy(Buffer.concat([header, row, Buffer.from([0xff, 0xff])])), /cut short|out of range/, 'a field longer than the data')
  t.same(parseBinaryCopy(Buffer.concat([header, Buffer.from([0xff, 0xff])])).count, 0, 'no rows')
})

t.test('a timestamptz\'s binary form written as the API writes an instant', async (t) => {
  // Instants from 1900 to 2200, some on whole seconds, some with one to six fraction digits.
  const rows = (await sql<{ bytes: Buffer | Uint8Array, text: string }>`SELECT timestamptz_send(ts) AS bytes, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS text
    FROM (SELECT '1900-01-01Z'::timestamptz + (n * 9467.123457 * (n % 7)) * interval '1 second' + (n % 3) * interval '1 day' AS ts FROM generate_series(0, 999) AS n
      UNION ALL SELECT '2000-01-01Z'::timestamptz UNION ALL SELECT '1999-12-31T23:59:59.999999Z' UNION ALL SELECT '2024-02-29T12:00:00.5Z' UNION ALL SELECT '2200-12-31T23:59:59.000001Z'
      -- Beyond 2^53 µs of 2000 (a BigInt's way), before year 1, after 9999.
      UNION ALL SELECT '1500-06-07T01:02:03.000001Z' UNION ALL SELECT '2500-01-01T00:00:00.25Z' UNION ALL SELECT '0044-03-15 12:00:00.5+00 BC'
      UNION ALL SELECT '0001-03-15 00:00+00 BC' UNION ALL SELECT '0001-01-01T00:00:00Z' UNION ALL SELECT '12345-06-07 01:02:03+00') AS s`.execute(db)).rows
  const buf = Buffer.alloc(64)
  const wrong = rows.flatMap(({ bytes, text }) => {
    const b = Buffer.from(bytes)
    const got = buf.toString('latin1', 0, writeIsoUtc(buf, 0, b.readInt32BE(0), b.readUInt32BE(4)))
    return got === isoUtcTrimmed(text) ? [] : [`${got} for ${text}`]
  })
  t.equal(rows.length, 1010)
  t.same(wrong.slice(0, 5), [], 'every one as to_char, trimmed')
})

t.test('the rows of a COPY: each field in its binary form, NULLs as -1', { skip: backend === 'embedded' ? 'the embedded backend reads rows, not COPY' : false }, async (t) => {
  t.ok(canCopy(db), 'the server backend copies')
  const rows = await copyBinary(db, {
    sql: 'SELECT s AS text, n::int8 AS long, n / 4.0::float8 AS double, n % 2 = 0 AS yes, CASE WHEN n = 2 THEN NULL ELSE $1 END AS maybe FROM (SELECT $2::text || n AS s, n FROM generate_series(1, 3) AS n) AS g ORDER BY n',
    parameters: [tricky[0], tricky[2]]
  })
  t.equal(rows.count, 3)
  t.equal(rows.fields, 5)
  const field = (r: number, f: number): Buffer | null => {
    const length = rows.lengths[r * rows.fields + f] as number
    const at = rows.starts[r * rows.fields + f] as number
    return length === -1 ? null : rows.data.subarray(at, at + length)
  }
  t.equal(field(0, 0)?.toString('utf8'), `${tricky[2] as string}1`, 'text as its UTF-8 bytes')
  t.equal(field(2, 1)?.readBigInt64BE(0), 3n, 'int8 big-endian')
  t.equal(field(2, 2)?.readDoubleBE(0), 0.75, 'float8 big-endian')
  t.same([field(0, 3)?.[0], field(1, 3)?.[0]], [0, 1], 'bool as one byte')
  t.equal(field(1, 4), null, 'NULL')
  t.equal(field(0, 4)?.toString('utf8'), tricky[0], 'a quoted parameter')
})

t.test('the embedded backend does not copy', { skip: backend === 'server' ? 'the server backend copies' : false }, async (t) => {
  t.notOk(canCopy(db))
  await t.rejects(copyBinary(db, { sql: 'SELECT 1', parameters: [] }), /cannot be copied/)
})

t.test('behind a transaction pooler, no COPY (pg\'s query_timeout would outlive it)', { skip: backend === 'embedded' ? 'the embedded backend does not copy' : false }, async (t) => {
  const pooled = await openDatabase({ ...targetConfig(target), DB_POOL_MODE: 'transaction' }, { poolMax: 1 })
  t.teardown(() => pooled.db.destroy())
  t.notOk(canCopy(pooled.db))
})
