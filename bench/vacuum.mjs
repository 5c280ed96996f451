// Autovacuum on the write-heavy tables (issue 49): dead tuples and size under a write load, with
// PostgreSQL's default autovacuum settings and with the table storage parameters of
// sql/034_autovacuum.sql. One throwaway PostGIS (autovacuum on, naptime 1 min, as shipped).
// BENCH_SOURCES sources seeded; then for BENCH_SECONDS, BENCH_WRITERS connections update random
// sources (each update writes a version, an event, tile counters, conflict pairs of the
// overlapping seeded neighbours) while one connection runs the event retention with a 30 s
// retention (deletes in events). Sampled every 5 s from pg_stat_user_tables. The load runs twice
// on the same data, each time after VACUUM FULL and with the seeding's events removed: with
// defaults, then with the 034 parameters.
// Usage: npm run build && node bench/vacuum.mjs   (prints Markdown to stdout)
import pg from 'pg'
import { benchDatabase } from './setup.mjs'

const SOURCES = Number(process.env.BENCH_SOURCES ?? 200_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 150)
const WRITERS = Number(process.env.BENCH_WRITERS ?? 4)
const TABLES = ['sources', 'source_versions', 'events', 'source_conflict_pairs', 'tile_changes']
const log = (m) => process.stderr.write(`[vacuum] ${m}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, db, seed } = await benchDatabase(log)
// 0.004° squares 0.01° apart: none overlap, so the conflict pairs come from the updates' growth below.
await seed(0, SOURCES)
await db.query('VACUUM ANALYZE')
const tuned = (await db.query(`SELECT c.relname, c.reloptions FROM pg_class AS c WHERE c.relname = ANY($1) AND c.relkind = 'r'`, [TABLES])).rows
log(`storage parameters now: ${JSON.stringify(tuned)}`)

async function load (label) {
  const clients = await Promise.all(Array.from({ length: WRITERS + 1 }, async () => { const c = new pg.Client({ connectionString: url }); await c.connect(); return c }))
  const end = Date.now() + SECONDS * 1000
  let updates = 0
  const peak = Object.fromEntries(TABLES.map((t) => [t, 0]))
  const writers = clients.slice(0, WRITERS).map(async (c) => {
    while (Date.now() < end) {
      await c.query(`UPDATE sources SET period = tstzrange(lower(period), upper(period) + interval '1 minute')
        WHERE id = 'src_' || lpad((floor(random() * ${SOURCES}))::int::text, 22, '0')`)
      updates++
    }
  })
  const retention = (async () => {
    const c = clients[WRITERS]
    while (Date.now() < end) {
      const { rows } = await c.query(`SELECT events_remove_expired(interval '30 seconds', 1000) AS n`)
      if ((rows[0].n ?? 0) < 1000) await sleep(1000)
    }
  })()
  const sampler = (async () => {
    while (Date.now() < end) {
      await sleep(5000)
      const { rows } = await db.query('SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE relname = ANY($1)', [TABLES])
      for (const r of rows) peak[r.relname] = Math.max(peak[r.relname], Number(r.n_dead_tup))
    }
  })()
  await Promise.all([...writers, retention, sampler])
  for (const c of clients) await c.end()
  await sleep(1500)
  const { rows } = await db.query(`SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, pg_total_relation_size(relid) AS bytes
    FROM pg_stat_user_tables WHERE relname = ANY($1)`, [TABLES])
  log(`${label}: ${updates} updates (${(updates / SECONDS).toFixed(0)}/s)`)
  return { updates, rows: Object.fromEntries(rows.map((r) => [r.relname, { ...r, peak: peak[r.relname] }])) }
}

async function reset () {
  for (const t of TABLES) await db.query(`VACUUM FULL ANALYZE ${t}`)
  await db.query('SELECT pg_stat_reset()')
}

// The seeding's events out of the way first: both loads start with an empty feed.
while ((await db.query(`SELECT events_remove_expired(interval '0 seconds', 100000) AS n`)).rows[0].n > 0);
await reset()
const defaults = `(autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor, autovacuum_analyze_scale_factor, autovacuum_vacuum_cost_delay, fillfactor)`
const saved = Object.fromEntries((await db.query(`SELECT relname, reloptions FROM pg_class WHERE relname = ANY($1) AND relkind = 'r'`, [TABLES])).rows.map((r) => [r.relname, r.reloptions]))
for (const t of TABLES) await db.query(`ALTER TABLE ${t} RESET ${defaults}`)
const a = await load('defaults')
await reset()
for (const [t, options] of Object.entries(saved)) if (options !== null) await db.query(`ALTER TABLE ${t} SET (${options.join(', ')})`)
const b = await load('tuned (034)')

console.log(`### Autovacuum under a write load: defaults vs sql/034_autovacuum.sql\n`)
console.log(`${SOURCES.toLocaleString('en')} sources; ${WRITERS} connections updating random sources for ${SECONDS} s (defaults: ${(a.updates / SECONDS).toFixed(0)} updates/s, 034: ${(b.updates / SECONDS).toFixed(0)}/s), the retention removing events older than 30 s; autovacuum_naptime 1 min. Peak: the most dead tuples seen in 5 s samples; end: after the load.\n`)
console.log('| table | 034 parameters | dead tuples, peak: defaults / 034 | dead at the end: defaults / 034 | autovacuums: defaults / 034 | size at the end, MB: defaults / 034 |\n|---|---|---|---|---|---|')
const mb = (x) => (Number(x) / 1048576).toFixed(1)
for (const t of TABLES) {
  const x = a.rows[t]; const y = b.rows[t]
  console.log(`| ${t} | ${(saved[t] ?? ['none']).join(', ')} | ${x.peak} / ${y.peak} | ${x.n_dead_tup} / ${y.n_dead_tup} | ${x.autovacuum_count} / ${y.autovacuum_count} | ${mb(x.bytes)} / ${mb(y.bytes)} |`)
}
await db.end()
process.exit(0)
