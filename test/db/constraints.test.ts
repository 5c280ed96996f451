// The database is the source of truth: rows written with plain SQL meet the same named
// constraints as rows written through the API.
import t from 'tap'
import { sql } from 'kysely'
import { addAccount, build } from '../helper.js'

const { db } = await build(t)
const owner = await addAccount(db, { role: 'editor', organisation: 'org-a' })

let n = 0
const nextId = () => `src_sqltest${String(++n).padStart(8, '0')}`
const square = 'POLYGON((0 0,1 0,1 1,0 1,0 0))'

function insert (over: { id?: string, feature?: string, geom?: string, period?: string, org?: string } = {}) {
  return sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES (
    ${over.id ?? nextId()}, ${over.feature ?? `f${n}`}, ${over.org ?? 'org-a'}, ${owner.id}::uuid,
    ST_GeomFromText(${over.geom ?? square}, 4326), ${over.period ?? '[2024-01-01Z,2024-02-01Z)'}::tstzrange)`.execute(db)
}

/** The name of the constraint that rejected the write (fails the test if none did). */
async function rejectedBy (write: Promise<unknown>): Promise<string | undefined> {
  try {
    await write
  } catch (err) {
    return (err as { constraint?: string }).constraint
  }
  return undefined
}

t.test('a valid row is accepted', async (t) => {
  await t.resolves(insert())
})

t.test('each named constraint rejects its violation', async (t) => {
  const cases: Array<[string, Parameters<typeof insert>[0]]> = [
    ['sources_id_format', { id: 'abc' }],
    ['sources_feature_id_length', { feature: '' }],
    ['sources_geom_valid', { geom: 'POLYGON((0 0,2 2,2 0,0 2,0 0))' }],
    ['sources_geom_not_empty', { geom: 'POLYGON EMPTY' }],
    ['sources_period_not_empty', { period: '[2024-01-01Z,2024-01-01Z)' }],
    ['sources_period_finite', { period: '[2024-01-01Z,)' }],
    ['sources_period_bounds', { period: '[2024-01-01Z,2024-02-01Z]' }],
    ['sources_period_in_window', { period: '[1800-01-01Z,2024-02-01Z)' }],
    ['sources_period_in_window', { period: '[2024-01-01Z,2100-01-01 00:00:01Z)' }]
  ]
  for (const [constraint, over] of cases) {
    t.equal(await rejectedBy(insert(over)), constraint)
  }
})

t.test('the exclusion constraint: same organisation, feature id and overlapping period', async (t) => {
  await insert({ feature: 'dup', period: '[2024-01-01Z,2024-03-01Z)' })
  t.equal(await rejectedBy(insert({ feature: 'dup', period: '[2024-02-01Z,2024-04-01Z)' })), 'sources_feature_period_excl')
  await t.resolves(insert({ feature: 'dup', period: '[2024-03-01Z,2024-04-01Z)' }), 'adjacent is fine')
  await t.resolves(insert({ feature: 'dup', org: 'org-b', period: '[2024-01-01Z,2024-03-01Z)' }), 'another organisation is fine')
})

t.test('the column is geometry(Geometry,4326), Polygons and MultiPolygons only: other types and SRIDs are refused', async (t) => {
  t.equal(await rejectedBy(insert({ geom: 'POINT(1 1)' })), 'sources_geom_polygonal')
  await t.rejects(sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    VALUES (${nextId()}, 'srid', 'org-a', ${owner.id}::uuid, ST_GeomFromText(${square}, 3857), '[2024-01-01Z,2024-02-01Z)')`.execute(db), /SRID/)
})

t.test('accounts: e-mail unique regardless of case, known roles only', async (t) => {
  await addAccount(db, { email: 'Case@Example.org' })
  t.equal(await rejectedBy(addAccount(db, { email: 'case@example.ORG' })), 'accounts_email_lower_key')
  t.equal(await rejectedBy(addAccount(db, { role: 'root' as never })), 'accounts_role_known')
  t.equal(await rejectedBy(sql`INSERT INTO accounts (email, password_hash, role, organisation) VALUES ('x@y.z', 'md5abc', 'viewer', 'o')`.execute(db)), 'accounts_password_hash_scrypt')
})

t.test('api_keys: known scopes, a name, a 32-byte hash, an expiry after creation', async (t) => {
  const owner = await addAccount(db, {})
  const hash = Buffer.alloc(32, 1)
  const insert = (over: { id?: string, scope?: string, name?: string, hash?: Buffer, expires?: string | null }) => sql`
    INSERT INTO api_keys (id, account_id, name, scope, secret_sha256, expires_at)
    VALUES (${over.id ?? 'A'.repeat(22)}, ${owner.id}::uuid, ${over.name ?? 'k'}, ${over.scope ?? 'read'}, ${over.hash ?? hash}, ${over.expires ?? null}::timestamptz)`.execute(db)
  t.equal(await rejectedBy(insert({ scope: 'admin' })), 'api_keys_scope_known')
  t.equal(await rejectedBy(insert({ name: '  ' })), 'api_keys_name_not_blank')
  t.equal(await rejectedBy(insert({ hash: Buffer.alloc(16) })), 'api_keys_secret_sha256_length')
  t.equal(await rejectedBy(insert({ id: 'srk_short' })), 'api_keys_id_format')
  t.equal(await rejectedBy(insert({ expires: '2001-01-01Z' })), 'api_keys_expires_after_created')
  await insert({})
  t.equal(await rejectedBy(sql`UPDATE api_keys SET revoked_by = ${owner.id}::uuid WHERE id = ${'A'.repeat(22)}`.execute(db)), 'api_keys_revoked_by_needs_revoked_at')
})

t.test('schema for analysts: GiST indexes and comments on the table and every column', async (t) => {
  const idx = await sql<{ indexname: string, indexdef: string }>`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'sources' ORDER BY 1`.execute(db)
  t.match(idx.rows.find((r) => r.indexname === 'sources_geom_gist')?.indexdef, /USING gist \(geom\)/)
  t.match(idx.rows.find((r) => r.indexname === 'sources_period_gist')?.indexdef, /USING gist \(period\)/)
  const uncommented = await sql<{ attname: string }>`
    SELECT a.attname FROM pg_attribute a
    WHERE a.attrelid IN ('sources'::regclass, 'accounts'::regclass, 'api_keys'::regclass) AND a.attnum > 0 AND NOT a.attisdropped
      AND col_description(a.attrelid, a.attnum) IS NULL`.execute(db)
  t.same(uncommented.rows, [], 'every column has a comment')
  const tables = await sql<{ c: string | null }>`SELECT obj_description('sources'::regclass) AS c UNION ALL SELECT obj_description('accounts'::regclass) UNION ALL SELECT obj_description('api_keys'::regclass)`.execute(db)
  t.notOk(tables.rows.some((r) => r.c === null), 'the tables have a comment')
  const plan = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT id FROM sources WHERE geom && ST_MakeEnvelope(0, 0, 1, 1, 4326)`.execute(db)
  t.ok(plan.rows.length > 0)
})
