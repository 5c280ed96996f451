// The triggers of a write run without JIT on a server that has it on (PostgreSQL's default): the
// planner's estimates for their statements (cell series, spatial joins) are far above
// jit_above_cost, and compiling them cost hundreds of ms on every write that itself takes about
// one. auto_explain, sent to this client as notices, shows each nested statement's plan with its
// JIT section when JIT ran; an insert, an overlapping insert (a conflict pair), an update and a
// delete through plain SQL must show none. Server backend only: PGlite has no JIT.
import t from 'tap'
import pg from 'pg'
import { addAccount, backend, build } from '../helper.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only: the embedded database has no JIT')
} else {
  const ctx = await build(t)
  const account = await addAccount(ctx.db, { role: 'editor', organisation: 'org-a' })
  const client = new pg.Client({ connectionString: ctx.url })
  await client.connect()
  t.teardown(() => client.end())
  const plans: string[] = []
  client.on('notice', (n) => { if (typeof n.message === 'string') plans.push(n.message) })

  t.test('an insert, a conflicting insert, an update and a delete: no statement JIT-compiled', async (t) => {
    const jit = await client.query<{ jit: string }>('SELECT current_setting(\'jit\') AS jit')
    t.equal(jit.rows[0]?.jit, 'on', 'JIT is on for this session, as on a default server')
    await client.query('LOAD \'auto_explain\'')
    for (const setting of ['auto_explain.log_min_duration = 0', 'auto_explain.log_nested_statements = on', 'auto_explain.log_analyze = on', 'auto_explain.log_level = notice', 'client_min_messages = notice']) {
      await client.query(`SET ${setting}`)
    }
    const box = (x: number) => `ST_GeomFromText('POLYGON((${x} 10, ${x + 1} 10, ${x + 1} 11, ${x} 11, ${x} 10))', 4326)`
    const insert = (id: string, x: number) => client.query(
      `INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
       VALUES ($1, $1, 'org-a', $2, ${box(x)}, tstzrange('2024-01-01', '2024-12-31'))`, [id, account.id])
    await insert('src_nojit0000000000001', 10)
    await insert('src_nojit0000000000002', 10.5)
    await client.query(`UPDATE sources SET geom = ${box(12)} WHERE id = 'src_nojit0000000000002'`)
    await client.query('DELETE FROM sources WHERE id = \'src_nojit0000000000001\'')
    t.ok(plans.some((p) => /tile_changes/.test(p)), `the triggers' statements were explained (${plans.length} plans)`)
    t.ok(plans.some((p) => /source_conflict_pairs/.test(p)), 'the conflict rule\'s among them')
    t.same(plans.filter((p) => /JIT:/.test(p)).map((p) => p.slice(0, 400)), [], 'none JIT-compiled')
  })

  // The write triggers run with plan_cache_mode = force_generic_plan (sql/functions/
  // conflict_rule.sql, tile_changes.sql): a custom plan, made afresh for each write's values,
  // shows them as literals; the generic plan shows the parameter (the tile counters' plans print
  // the same either way, so the conflict trigger's stand for both here). The first write of a
  // session is the telling one: without the setting, PostgreSQL makes custom plans for the first
  // five.
  t.test('the write triggers run on generic plans from the first write', async (t) => {
    const fresh = new pg.Client({ connectionString: ctx.url })
    await fresh.connect()
    t.teardown(() => fresh.end())
    const seen: string[] = []
    fresh.on('notice', (n) => { if (typeof n.message === 'string') seen.push(n.message) })
    await fresh.query('LOAD \'auto_explain\'')
    for (const setting of ['auto_explain.log_min_duration = 0', 'auto_explain.log_nested_statements = on', 'auto_explain.log_verbose = on', 'auto_explain.log_level = notice', 'client_min_messages = notice']) {
      await fresh.query(`SET ${setting}`)
    }
    await fresh.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
      VALUES ('src_generic000000000001', 'generic-1', 'org-a', $1, ST_GeomFromText('POLYGON((30 10, 31 10, 31 11, 30 11, 30 10))', 4326), tstzrange('2024-01-01', '2024-12-31'))`, [account.id])
    const plan = (query: RegExp): string => seen.find((p) => query.test(p)) ?? ''
    // The conflict lock's key class is a constant of the function: a custom plan prints its value.
    t.match(plan(/Output: pg_advisory_xact_lock_shared\(/), /pg_advisory_xact_lock_shared\(\$\d+, /, 'the conflict lock\'s statement reads its parameter: a generic plan')
    const pairs = plan(/Query Text: INSERT INTO source_conflict_pairs/)
    t.match(pairs, /ANY \(\$1\)/, 'so does the pair search')
    t.notMatch(pairs, /src_generic000000000001/, 'not the id written')
  })
}
