// The embedded default as a newcomer meets it: `git clone` of this repository, `npm ci`, then
// `npm start` timed to the first 200 from /health, BENCH_RUNS times from an empty DATA_DIR (a
// first start) and BENCH_RUNS times on the database that left (a restart); median and min–max,
// the service's peak RSS (VmHWM) and the load average around each run. Prints a JSON summary.
//   node bench/first-start.mjs [repository, default: this one] (BENCH_RUNS, default 5)
// npm ci's own time includes `prepare` (tsc and scripts/embedded.mjs: the unpacked PostGIS and
// the migrated template).
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort } from './setup.mjs'

const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const repo = resolve(process.argv[2] ?? join(import.meta.dirname, '..'))
const log = (m) => process.stderr.write(`[first-start] ${m}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const load = () => Number(loadavg()[0].toFixed(1))

const clone = mkdtempSync(join(tmpdir(), 'sr-first-start-'))
process.on('exit', () => rmSync(clone, { recursive: true, force: true }))
execFileSync('git', ['clone', '--quiet', repo, clone], { stdio: 'inherit' })
let t = performance.now()
const npmCiLoad = load()
execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: clone, stdio: ['ignore', 'ignore', 'inherit'] })
const npmCiMs = Math.round(performance.now() - t)
log(`npm ci (with prepare): ${(npmCiMs / 1000).toFixed(1)} s`)

/** `npm start` to the first 200 of /health; then SIGINT to its process group, and its peak RSS. */
async function start () {
  const port = await freePort()
  const before = load()
  const t0 = performance.now()
  const child = spawn('npm', ['start'], { cwd: clone, env: { ...process.env, PORT: String(port), LOG_LEVEL: 'info' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  let exited = false
  child.once('exit', () => { exited = true })
  for (;;) {
    if (exited) throw new Error(`npm start exited:\n${out}`)
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
    if (ok) break
    await sleep(20)
  }
  const ms = Math.round(performance.now() - t0)
  // The service is the node process of the group running dist/main.cjs (not npm's shell).
  const pids = execFileSync('pgrep', ['-g', String(child.pid)], { encoding: 'utf8' }).trim().split('\n')
  const service = pids.find((p) => {
    try { return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'node' && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('dist/main.cjs') } catch { return false }
  })
  const hwmKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${service}/status`, 'utf8'))?.[1])
  const ready = out.split('\n').filter((l) => l.includes('"backend":"embedded"')).map((l) => JSON.parse(l))[0]
  process.kill(-child.pid, 'SIGINT')
  await new Promise((resolve) => exited ? resolve() : child.once('exit', resolve))
  return { ms, rssMb: Math.round(hwmKb / 1024), load: [before, load()], fromTemplate: ready?.fromTemplate, readyMs: ready?.readyMs }
}

const runs = { first: [], restart: [] }
for (let i = 0; i < RUNS; i++) {
  rmSync(join(clone, 'data'), { recursive: true, force: true })
  runs.first.push(await start())
  log(`first start ${i + 1}: ${JSON.stringify(runs.first.at(-1))}`)
  runs.restart.push(await start())
  log(`restart ${i + 1}: ${JSON.stringify(runs.restart.at(-1))}`)
}
const summary = (xs) => ({
  medianMs: median(xs.map((x) => x.ms)),
  minMs: Math.min(...xs.map((x) => x.ms)),
  maxMs: Math.max(...xs.map((x) => x.ms)),
  medianRssMb: median(xs.map((x) => x.rssMb)),
  load: [Math.min(...xs.flatMap((x) => x.load)), Math.max(...xs.flatMap((x) => x.load))]
})
console.log(JSON.stringify({ commit: execFileSync('git', ['-C', clone, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(), npmCi: { ms: npmCiMs, load: npmCiLoad }, first: summary(runs.first), restart: summary(runs.restart), runs }, null, 2))
