// A cursor page sorted by id reads limit + 1 rows of an index in id order and stops, whatever is
// after the cursor: its statement orders the bounded ids the way the index returns them. It
// once ordered them by `sort_key, id`, in which PostgreSQL did not see the index's order: where
// it expected few rows (as here, and for one organisation of the benchmark) it sorted all rows
// of the bound, up to 10,001, for every page and every chunk of a streamed page.
import t from 'tap'
import { CompiledQuery, sql } from 'kysely'
import { compileByShape, queryBuilder } from '../../src/db/compiled-query.js'
import { LIST_INPUT_SHAPE_KEYS, listPageQuery } from '../../src/sources/sources.listing.js'
import { addAccount, build } from '../helper.js'

const { db } = await build(t)
const owner = await addAccount(db, { role: 'editor', organisation: 'org-plan' })
const ROWS = 2000
await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_plan' || lpad(n::text, 18, '0'), 'plan-' || n, 'org-plan', ${owner.id}::uuid,
    ST_MakeEnvelope(n * 0.001, 0, n * 0.001 + 0.0005, 0.0005, 4326), '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, ${ROWS}) AS n`.execute(db)
// For sortby=start_at: one organisation's sources a day apart.
await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_plst' || lpad(n::text, 18, '0'), 'plst-' || n, 'org-plan-start', ${owner.id}::uuid,
    ST_MakeEnvelope(n * 0.001, 1, n * 0.001 + 0.0005, 1.0005, 4326), tstzrange('2020-01-01Z'::timestamptz + n * interval '1 day', '2030-01-01Z')
  FROM generate_series(1, ${ROWS}) AS n`.execute(db)
// A small organisation (1 % of the rows) whose ids sort after org-plan's 2,000.
await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_plsm' || lpad(n::text, 18, '0'), 'plsm-' || n, 'org-plan-small', ${owner.id}::uuid,
    ST_MakeEnvelope(n * 0.001, 2, n * 0.001 + 0.0005, 2.0005, 4326), '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, 40) AS n`.execute(db)
await sql`ANALYZE sources`.execute(db)

interface PlanNode { 'Node Type': string, 'Index Name'?: string, 'Actual Rows': number, 'Actual Loops': number, 'Rows Removed by Filter'?: number, Plans?: PlanNode[] }
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)]

/** EXPLAIN ANALYZE of a page's statement as on a large table: rows reached by an index, not a scan of all. */
async function explained (page: { sql: string, parameters: readonly unknown[] }): Promise<PlanNode | undefined> {
  return await db.connection().execute(async (conn) => {
    await sql`SET enable_seqscan = off`.execute(conn)
    await sql`SET enable_bitmapscan = off`.execute(conn)
    try {
      return (await conn.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${page.sql}`, [...page.parameters]))).rows[0]?.['QUERY PLAN'][0].Plan
    } finally {
      await sql`RESET enable_seqscan`.execute(conn)
      await sql`RESET enable_bitmapscan`.execute(conn)
    }
  })
}

for (const descending of [false, true]) {
  t.test(`a page of 5 after a cursor, id ${descending ? 'descending' : 'ascending'}: an index in id order is read for 6 rows`, async (t) => {
    const cursor = `src_plan${String(descending ? ROWS - 10 : 10).padStart(18, '0')}`
    const page = compileByShape((i: Parameters<typeof listPageQuery>[1]) => listPageQuery(queryBuilder, i), LIST_INPUT_SHAPE_KEYS)({
      scope: { organisation: 'org-plan' }, filter: {}, page: { sort: [{ field: 'id', descending }], after: { values: [], id: cursor }, limit: 5 }, cap: 100
    })
    const plan = await explained(page)
    t.ok(plan !== undefined, 'EXPLAIN gave a plan')
    // The primary key or (organisation, id): either is in id order; the planner takes the first
    // for an organisation holding half of the rows.
    const scans = nodes(plan as PlanNode).filter((n) => (n['Index Name'] === 'sources_pkey' || n['Index Name'] === 'sources_organisation_id_idx') && n['Actual Loops'] === 1)
    t.equal(scans.length, 1, 'one scan of an index in id order chooses the page')
    t.equal(scans[0]?.['Actual Rows'], 6, 'limit + 1 rows, not the 1,990 after the cursor')
    t.notOk(nodes(plan as PlanNode).some((n) => n['Node Type'] === 'Sort' && (n.Plans ?? []).some((input) => input['Actual Rows'] > 6)), 'nothing sorts more rows than the page')
  })
}

t.test('a first page of a small organisation whose ids sort after another\'s 2,000: none of the other\'s rows is read', async (t) => {
  // org-plan-small's ids (src_plsm…) sort after all of org-plan's (src_plan…): read through the
  // primary key, each of those was read and filtered out first (sql/062_sources_organisation_id.sql).
  const page = compileByShape((i: Parameters<typeof listPageQuery>[1]) => listPageQuery(queryBuilder, i), LIST_INPUT_SHAPE_KEYS)({
    scope: { organisation: 'org-plan-small' }, filter: {}, page: { sort: [{ field: 'id', descending: false }], limit: 5 }, cap: 100
  })
  const plan = await explained(page)
  t.ok(plan !== undefined, 'EXPLAIN gave a plan')
  const scans = nodes(plan as PlanNode).filter((n) => n['Index Name'] === 'sources_organisation_id_idx')
  t.equal(scans[0]?.['Actual Rows'], 6, 'limit + 1 rows of sources_organisation_id_idx')
  t.notOk(nodes(plan as PlanNode).some((n) => (n['Rows Removed by Filter'] ?? 0) > 0), 'no row read and filtered out')
})

for (const descending of [false, true]) {
  t.test(`sortby=${descending ? '-' : ''}start_at, a page of 5 after a cursor: sources_organisation_start_idx is read for 6 rows`, async (t) => {
    const n = descending ? ROWS - 10 : 10
    const at = new Date(Date.UTC(2020, 0, 1) + n * 86_400_000).toISOString().replace('.000Z', 'Z')
    const page = compileByShape((i: Parameters<typeof listPageQuery>[1]) => listPageQuery(queryBuilder, i), LIST_INPUT_SHAPE_KEYS)({
      scope: { organisation: 'org-plan-start' }, filter: {}, page: { sort: [{ field: 'start_at', descending }, { field: 'id', descending }], after: { values: [at], id: `src_plst${String(n).padStart(18, '0')}` }, limit: 5 }, cap: 100
    })
    const plan = await explained(page)
    const scans = nodes(plan as PlanNode).filter((x) => x['Index Name'] === 'sources_organisation_start_idx')
    t.equal(scans.length, 1, 'one scan of the index chooses the page')
    t.equal(scans[0]?.['Actual Rows'], 6, 'limit + 1 rows, not the 1,990 after the cursor')
    t.notOk(nodes(plan as PlanNode).some((x) => x['Node Type'] === 'Sort' && (x.Plans ?? []).some((input) => input['Actual Rows'] > 6)), 'nothing sorts more rows than the page')
  })
}
