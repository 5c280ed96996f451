// The test command. Runs the tap suite against one backend:
//   embedded (default): the in-process PGlite + PostGIS database, nothing to install;
//   server (TEST_BACKEND=server, or TEST_DATABASE_URL given): a real PostGIS server, either
//     TEST_DATABASE_URL (whose user may create databases) or a throwaway cluster started here
//     and removed afterwards.
// Either way a template is migrated once through the CLI's `migrate`, and each test file works
// on a copy of its own.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgis } from './postgis.mjs'

const started = Date.now()
const log = (msg) => process.stderr.write(`[test] ${msg}\n`)
const backend = process.env.TEST_BACKEND ?? (process.env.TEST_DATABASE_URL ? 'server' : 'embedded')
if (!['server', 'embedded'].includes(backend)) { log(`TEST_BACKEND must be server or embedded, not ${backend}`); process.exit(2) }

// The suite decides the database per file; a DATABASE_URL from the caller's .env must not leak in.
const baseEnv = { ...process.env, NODE_ENV: 'test' }
delete baseEnv.DATABASE_URL
delete baseEnv.DATA_DIR

function withDatabase (url, name) {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

async function admin (url, text) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try { await client.query(text) } finally { await client.end() }
}

function migrateTemplate (env) {
  const r = spawnSync(process.execPath, ['dist/cli.js', 'migrate'], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'inherit', 'inherit'] })
  if (r.status !== 0) throw new Error('migrating the template database failed')
}

let cleanup = async () => {}
const tapEnv = { ...baseEnv, TEST_BACKEND: backend }
let code = 1
try {
  if (backend === 'server') {
    let adminUrl = process.env.TEST_DATABASE_URL
    let cluster
    if (!adminUrl) {
      cluster = await startPostgis({ log })
      adminUrl = cluster.url
      for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cluster.stop(); process.exit(130) })
    } else {
      log('using TEST_DATABASE_URL')
    }
    const template = `sr_template_${randomBytes(4).toString('hex')}`
    cleanup = async () => {
      if (cluster) cluster.stop()
      else await admin(adminUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {})
    }
    await admin(adminUrl, `CREATE DATABASE ${template}`)
    migrateTemplate({ DATABASE_URL: withDatabase(adminUrl, template) })
    Object.assign(tapEnv, { TEST_ADMIN_URL: adminUrl, TEST_TEMPLATE_DB: template })
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'source-registry-template-'))
    cleanup = async () => rmSync(dir, { recursive: true, force: true })
    log(`embedded backend: migrating a template data directory in ${dir}`)
    migrateTemplate({ DATA_DIR: dir })
    tapEnv.TEST_TEMPLATE_DIR = dir
  }
  const runTap = (args, env) => new Promise((resolve) => {
    const tap = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...args], { stdio: 'inherit', env })
    tap.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)))
  })
  if (process.argv.length === 2) {
    // tap rebuilds its Test class when package.json's plugins differ from those it was installed
    // with (a fresh npm ci: with @tapjs/typescript), but only for the run after the one that
    // noticed, which still loads every file with ts-node as well as tsx: built first, the whole
    // suite runs with tsx alone.
    const built = spawnSync(process.execPath, ['node_modules/tap/dist/esm/run.mjs', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] })
    if (built.status !== 0) throw new Error('tap build failed')
  }
  log(`running the suite against the ${backend} backend`)
  // No coverage: tap's coverage of the test files' imports, loaded by tsx, is mapped wrongly
  // (71 % of lines against ts-node's 93 % for the same tests), and no table beats a wrong one.
  code = await runTap(['--disable-coverage', ...withTestFiles(process.argv.slice(2))], tapEnv)
  // The sources tests once more without batching (DB_FAST_PATH=false): the store must give the
  // same answers both ways. Only for a whole-suite run.
  if (code === 0 && process.argv.length === 2) {
    log(`running test/sources again without batching (DB_FAST_PATH=false), ${backend} backend`)
    code = await runTap(['--disable-coverage', ...withTestFiles(['test/sources'])], { ...tapEnv, TEST_DB_FAST_PATH: 'false' })
  }
} catch (err) {
  log(err.message)
} finally {
  await cleanup()
}
if (code !== 0) reportFailures()
process.exit(code)

/**
 * The arguments with each directory replaced by its test files (*.test.ts, in its subdirectories
 * too): tap expands a directory only to the extensions of its loader plugins, and the tests are
 * loaded by tsx (package.json), not by a plugin.
 */
function withTestFiles (args) {
  return args.flatMap((arg) => !arg.startsWith('-') && existsSync(arg) && statSync(arg).isDirectory()
    ? readdirSync(arg, { recursive: true }).map(String).filter((f) => f.endsWith('.test.ts')).sort().map((f) => join(arg, f))
    : [arg])
}

/**
 * The failed assertions again, last: tap prints them where they happen, thousands of lines
 * before the end, and a CI log cut to its tail showed only "fail: 1". Read from tap's saved results.
 */
function reportFailures () {
  const root = '.tap/test-results'
  if (!existsSync(root)) return
  const lines = []
  for (const file of readdirSync(root, { recursive: true })) {
    // Only this run's results: the directory keeps those of files not run this time.
    if (!String(file).endsWith('.tap') || statSync(join(root, String(file))).mtimeMs < started) continue
    const text = readFileSync(join(root, String(file)), 'utf8').split('\n')
    text.forEach((line, i) => {
      if (!/^\s*not ok /.test(line) || /# (TODO|SKIP)/i.test(line)) return
      // The diagnostics tap writes under the line (message, found/wanted, at), up to 12 lines.
      const yaml = []
      for (let j = i + 1; j < text.length && j <= i + 12 && !/^\s*(not )?ok /.test(text[j]); j++) yaml.push(text[j])
      lines.push(`${String(file).replace(/\.tap$/, '')}: ${line.trim()}`, ...yaml.map((l) => `    ${l.trim()}`))
    })
  }
  if (lines.length > 0) log(`failed:\n${lines.slice(0, 120).join('\n')}`)
}
