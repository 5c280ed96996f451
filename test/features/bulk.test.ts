// The CLI's export and import, as ops run them (dist/cli.js): an import of a GeoJSONSeq file in
// batches with the POST rules, refused features reported with their reasons, killed with
// SIGKILL mid-way and resumed without storing a feature twice; its export as FlatGeobuf and
// GeoJSONSeq read back by GDAL and imported again by another organisation: the same set.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, createDatabase, targetConfig, tempDir } from '../helper.js'

const hasGdal = spawnSync('ogrinfo', ['--version']).status === 0
const target = await createDatabase(t)
const env = { PATH: process.env.PATH, ...(backend === 'server' ? { DATABASE_URL: target } : { DATA_DIR: target }) }
const cli = (args: string[]) => {
  const r = spawnSync(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8', env })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}
/** The database, opened only while the CLI is not running (the embedded one takes one process). */
async function query<T> (run: (db: Awaited<ReturnType<typeof openDatabase>>['db']) => Promise<T>): Promise<T> {
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  try { return await run(db) } finally { await db.destroy() }
}
const [a, b] = await query(async (db) => [await addAccount(db, { role: 'editor', organisation: 'org-a' }), await addAccount(db, { role: 'editor', organisation: 'org-b' })])
const dir = await tempDir(t, 'sr-bulk-')

const N = 200
const box = (i: number) => { const x = (i % 40) * 0.3; const y = Math.floor(i / 40) * 0.3; return [[[x, y], [x + 0.2, y], [x + 0.2, y + 0.2], [x, y + 0.2], [x, y]]] }
const good = (i: number) => ({ type: 'Feature', id: `f-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2025-01-01T00:00:00Z', note: 'ignored' }, geometry: { type: 'Polygon', coordinates: box(i) } })
const lines = Array.from({ length: N }, (_, i) => good(i) as unknown)
lines[7] = { ...good(7), geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] } } // a bow tie
lines[93] = { ...good(93), properties: { start_at: '2024-01-01T00:00:00Z' } } // no end_at
// A MultiPolygon (the feature's box and a sliver in the gap beside it): checked by the import as POST checks it.
lines[120] = { ...good(120), geometry: { type: 'MultiPolygon', coordinates: [box(120), [[[0.22, 0.9], [0.28, 0.9], [0.28, 1], [0.22, 1], [0.22, 0.9]]]] } }
lines[150] = { ...good(150), properties: { start_at: '2025-01-01T00:00:00Z', end_at: '2024-01-01T00:00:00Z' } } // ends before it starts
const file = join(dir, 'in.geojsons')
await writeFile(file, lines.map((l) => `\u001e${JSON.stringify(l)}\n`).join('') + '\u001enot json\n')

const orgRows = (org: string) => query(async (db) => (await sql<{ feature_id: string, period: string, geom: string }>`
  SELECT feature_id, period::text AS period, ST_AsText(geom) AS geom FROM sources WHERE organisation = ${org} ORDER BY feature_id`.execute(db)).rows)

t.test('import: killed with SIGKILL, resumed, every good feature once, the refused ones with reasons', async (t) => {
  const child = spawn(process.execPath, ['dist/cli.js', 'import', '--as', a.email, '--from', file, '--batch', '20'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  // Listened for from the start: an import that fails at once has exited before the kill.
  const exited = once(child, 'exit')
  let killedStderr = ''
  child.stderr.on('data', (d: Buffer) => { killedStderr += d.toString() })
  // Killed once the first batches are settled (the progress file), well before the end. On the
  // embedded backend the import runs to its end instead: a PGlite killed mid-write leaves its
  // data directory to the next open's crash recovery, which is the database's, not the import's.
  if (backend === 'server') {
    while (!existsSync(`${file}.progress`) && child.exitCode === null) await sleep(20)
    t.equal(child.exitCode, null, 'still importing when the first batches are settled', { stderr: killedStderr })
    child.kill('SIGKILL')
  }
  await exited
  const before = (await orgRows('org-a')).length
  if (backend === 'server') t.ok(before < N - 3, `killed part-way (${before} stored)`)
  const resumed = cli(['import', '--as', a.email, '--from', file, '--batch', '20'])
  t.equal(resumed.code, 3, 'exit 3: some features were refused')
  t.match(resumed.stdout, new RegExp(`imported \\d+, already stored \\d+, refused [34]`))
  for (const id of ['f-7', 'f-93', 'f-150']) t.match(killedStderr + resumed.stderr, new RegExp(`refused feature \\d+ \\(${id}\\): .+`), `${id} refused with a reason`)
  t.match(killedStderr + resumed.stderr, /refused feature 93 \(f-93\): \/properties\/end_at: is required/, 'a schema failure told as POST tells it')
  t.match(resumed.stderr, /refused feature 200: line 201/, 'the unparsable line')
  const rows = await orgRows('org-a')
  t.equal(rows.length, N - 3, 'every good feature stored')
  t.equal(new Set(rows.map((r) => r.feature_id)).size, rows.length, 'none twice')
  t.notOk(existsSync(`${file}.progress`), 'the progress file is removed at the end')
  const again = cli(['import', '--as', a.email, '--from', file])
  t.match(again.stdout, new RegExp(`imported 0, already stored ${N - 3}, refused 4`), 'a whole re-run stores nothing twice')
  t.equal((await orgRows('org-a')).length, N - 3)
})

t.test('export FlatGeobuf and GeoJSONSeq; GDAL reads them; org-b imports them: the same set', async (t) => {
  const fgb = join(dir, 'out.fgb')
  const seq = join(dir, 'out.geojsons')
  const e1 = cli(['export', '--org', 'org-a', '--format', 'fgb', '--to', fgb])
  t.equal(e1.code, 0, e1.stderr)
  t.match(e1.stdout, `exported ${N - 3} sources`)
  const e2 = cli(['export', '--org', 'org-a', '--format', 'geojsonseq', '--to', seq, '--filter', "feature_id LIKE 'f-1%'"])
  t.equal(e2.code, 0, e2.stderr)
  t.match(e2.stdout, /exported 110 sources/, 'the CQL2 filter')
  t.equal(cli(['export', '--org', 'org-a', '--format', 'gpkg', '--to', join(dir, 'x.gpkg')]).code, 2, 'GeoPackage: not offered, said why')
  if (hasGdal) {
    t.match(spawnSync('ogrinfo', ['-ro', '-al', '-so', fgb], { encoding: 'utf8' }).stdout, `Feature Count: ${N - 3}`)
    t.match(spawnSync('ogrinfo', ['-ro', '-al', '-so', seq], { encoding: 'utf8' }).stdout, 'Feature Count: 110')
  }
  const i = cli(['import', '--as', b.email, '--from', fgb])
  t.equal(i.code, 0, i.stderr)
  t.match(i.stdout, `imported ${N - 3}, already stored 0, refused 0`)
  t.same(await orgRows('org-b'), await orgRows('org-a'), 'the same feature ids, periods and geometries')
})

// In a terminal the progress bars redraw on a timer, which kept the CLI running after its last
// line until they were stopped: an export or import in a terminal never returned.
const noScript = spawnSync('script', ['--version']).status !== 0 ? 'no script(1) to give the CLI a terminal' : false
t.test('in a terminal: export and import draw their bars, with the total when known, and exit', { skip: noScript }, async (t) => {
  // timeout(1) ends a CLI that hangs (script's own end would leave it holding the database).
  const inTerminal = (args: string[]) => spawnSync('script', ['-qec', ['timeout', '50', process.execPath, 'dist/cli.js', ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' '), '/dev/null'], { encoding: 'utf8', env, timeout: 60_000 })
  const seq = join(dir, 'terminal.geojsons')
  const e = inTerminal(['export', '--org', 'org-a', '--format', 'geojsonseq', '--to', seq, '--filter', "feature_id LIKE 'f-1%'"])
  t.equal(e.status, 0, `exited (status ${String(e.status)}, signal ${String(e.signal)})`, { output: e.stdout })
  t.match(e.stdout, /100% \| 110\/110 exported/, 'the bar counts up to the number of matches')
  t.match(e.stdout, /exported 110 sources/)
  const i = inTerminal(['import', '--as', a.email, '--from', seq])
  t.equal(i.status, 0, `exited (status ${String(i.status)}, signal ${String(i.signal)})`, { output: i.stdout })
  t.match(i.stdout, /110 read/, 'the bar counts what it read')
  t.match(i.stdout, /imported 0, already stored 110, refused 0/)
})
