// Bulk export and import against ogr2ogr on the same PostGIS (a throwaway cluster): the CLI's
// export to FlatGeobuf and GeoJSONSeq vs ogr2ogr reading the same rows from PostGIS into the
// same format, and the CLI's import of a GeoJSONSeq file vs ogr2ogr -f PostgreSQL appending the
// same file into the same `sources` table (its constraints and triggers: conflicts, versions,
// events). Features/s and the CLI's peak RSS (GNU time). N features (default 20000):
//   npm run build && node bench/bulk.mjs [N]
// Export only, from a database an earlier bench seeded (e.g. bench/crs.mjs's million sources):
//   BENCH_DATABASE_URL=postgres://… BENCH_EXPORT_ORG=bench [BENCH_RUNS=5] node bench/bulk.mjs
import { spawnSync } from 'node:child_process'
import { mkdtempSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgis } from '../scripts/postgis.mjs'

const EXPORT_ORG = process.env.BENCH_EXPORT_ORG
const dir = mkdtempSync(join(tmpdir(), 'bench-bulk-'))
const server = EXPORT_ORG === undefined ? await startPostgis() : undefined
const url = server?.url ?? process.env.BENCH_DATABASE_URL
const env = { ...process.env, DATABASE_URL: String(url) }
delete env.DATA_DIR
const parsed = new URL(String(url))
const pgDsn = `PG:host=${parsed.hostname} port=${parsed.port} dbname=${parsed.pathname.slice(1) || 'postgres'} user=${parsed.username || 'postgres'}`
const cli = (args, input) => {
  const t0 = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, 'dist/cli.js', ...args], { env, encoding: 'utf8', input, maxBuffer: 1e8 })
  const s = Number(process.hrtime.bigint() - t0) / 1e9
  if (r.status !== 0 && r.status !== 3) throw new Error(`${args.join(' ')}: ${r.stderr}`)
  const lines = r.stderr.trim().split('\n')
  return { s, rssMb: Number(lines.at(-1)) / 1024, stdout: r.stdout }
}
const timed = (cmd, args, cmdEnv = process.env) => {
  const t0 = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { env: cmdEnv, encoding: 'utf8', maxBuffer: 1e8 })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`)
  return { s: Number(process.hrtime.bigint() - t0) / 1e9, rssMb: Number(r.stderr.trim().split('\n').at(-1)) / 1024, stdout: r.stdout }
}

const client = new pg.Client({ connectionString: String(url) })
await client.connect()
const N = EXPORT_ORG === undefined ? Number(process.argv[2] ?? 20000) : (await client.query('SELECT count(*)::int AS n FROM sources WHERE organisation = $1', [EXPORT_ORG])).rows[0].n
const ORG = EXPORT_ORG ?? 'acme'
const results = []
const rate = (s) => Math.round(N / s)
if (EXPORT_ORG === undefined) await importBoth()
/** Imports of the same N features: the CLI, then ogr2ogr appending to sources. */
async function importBoth () {
  cli(['migrate'])
  cli(['account', 'add', '--email', 'bench@example.org', '--org', 'acme', '--role', 'editor', '--password-stdin'], 'bench password 123456')
  cli(['account', 'add', '--email', 'ogr@example.org', '--org', 'ogr', '--role', 'editor', '--password-stdin'], 'bench password 123456')
  const ogrAccount = (await client.query("SELECT id FROM accounts WHERE email = 'ogr@example.org'")).rows[0].id

  // N small non-overlapping boxes, 10-vertex rings, one period.
  const side = Math.ceil(Math.sqrt(N))
  const lines = []
  for (let i = 0; i < N; i++) {
    const x = -170 + (i % side) * (340 / side); const y = -80 + Math.floor(i / side) * (160 / side); const d = 100 / side
    const ring = [[x, y], [x + d / 2, y], [x + d, y], [x + d, y + d / 2], [x + d, y + d], [x + d / 2, y + d], [x, y + d], [x, y + d / 2], [x + d / 4, y + d / 4], [x, y]]
    lines.push(`\u001e${JSON.stringify({ type: 'Feature', id: `f-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2025-01-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [ring] } })}\n`)
}
const input = join(dir, 'in.geojsons')
writeFileSync(input, lines.join(''))

// Import: ours, then ogr2ogr appending the same file to sources (ids and periods made in its SQL).
const ours = cli(['import', '--as', 'bench@example.org', '--from', input, '--batch', '1000'])
const ogrIn = timed('ogr2ogr', ['-f', 'PostgreSQL', pgDsn, input, '-nln', 'sources', '-append', '-nlt', 'POLYGON', '-dialect', 'SQLite',
  '-sql', `SELECT printf('src_%022d', rowid) AS id, id AS feature_id, 'ogr' AS organisation, '${ogrAccount}' AS created_by, '[2024-01-01T00:00:00Z,2025-01-01T00:00:00Z)' AS period, geometry AS geom FROM "in"`,
  '--config', 'PG_USE_COPY', 'YES', '-gt', '1000'])
const counted = (await client.query("SELECT organisation, count(*)::int AS n FROM sources GROUP BY 1 ORDER BY 1")).rows
results.push({ what: 'import GeoJSONSeq', ours: rate(ours.s), ogr: rate(ogrIn.s), oursRssMb: ours.rssMb, counted })
}

// BENCH_RUNS (1) exports of each side, taking turns, so that the VM's changes of speed (ogr2ogr's
// own figure moved by half between runs) fall on both: the medians, and each turn's ratio.
const RUNS = Number(process.env.BENCH_RUNS ?? 1)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [format, driver, ext] of [['fgb', 'FlatGeobuf', 'fgb'], ['geojsonseq', 'GeoJSONSeq', 'geojsons']]) {
  const out = join(dir, `ours.${ext}`)
  const ogrOut = join(dir, `ogr.${ext}`)
  const turns = Array.from({ length: RUNS }, () => {
    const e = cli(['export', '--org', ORG, '--format', format, '--to', out])
    const o = timed('ogr2ogr', ['-f', driver, ogrOut, pgDsn, '-sql', `SELECT id, feature_id, lower(period) AS start_at, upper(period) AS end_at, created_at, organisation, area_m2, geom FROM sources WHERE organisation = '${ORG}'`])
    // FlatGeobuf's floor: the export's own statements read through node-postgres, rows dropped
    // (bench/export-floor.mjs): what an export of these Features through this driver cannot beat.
    const f = format === 'fgb' ? timed(process.execPath, ['bench/export-floor.mjs', ORG], env) : undefined
    if (f !== undefined && JSON.parse(f.stdout).rows !== N) throw new Error(`the floor read ${f.stdout.trim()}, not the ${N} sources of ${ORG}`)
    return { e, o, f }
  })
  results.push({
    what: `export ${driver}`,
    ours: median(turns.map((t) => rate(t.e.s))),
    ogr: median(turns.map((t) => rate(t.o.s))),
    ratios: turns.map((t) => Number((t.o.s / t.e.s).toFixed(2))),
    ...(turns[0].f !== undefined ? { floor: median(turns.map((t) => rate(t.f.s))), floorRatios: turns.map((t) => Number((t.o.s / t.f.s).toFixed(2))) } : {}),
    oursRssMb: Math.max(...turns.map((t) => t.e.rssMb)),
    ogrRssMb: Math.max(...turns.map((t) => t.o.rssMb)),
    oursBytes: statSync(out).size,
    ogrBytes: statSync(ogrOut).size
  })
}
await client.end()
console.log(JSON.stringify({ N, results }, null, 1))
for (const r of results) console.log(`${r.what}: ours ${r.ours}/s, ogr2ogr ${r.ogr}/s, ratio ${(r.ours / r.ogr).toFixed(2)}×${r.ratios?.length > 1 ? ` (each turn ${Math.min(...r.ratios)}–${Math.max(...r.ratios)}×)` : ''}, our peak RSS ${r.oursRssMb.toFixed(0)} MB${r.floor !== undefined ? `; floor (its statements read, rows dropped) ${r.floor}/s, ${(r.floor / r.ogr).toFixed(2)}× ogr2ogr (each turn ${Math.min(...r.floorRatios)}–${Math.max(...r.floorRatios)}×)` : ''}`)
await server?.stop?.()
process.exit(0)
