// The test command. Uses TEST_DATABASE_URL (a PostGIS server whose user may create databases)
// when given; otherwise starts a throwaway PostGIS cluster and removes it afterwards. Creates a
// migrated template database (through the CLI's `migrate`), then runs tap; each test file clones
// the template into a database of its own.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { startPostgis } from './postgis.mjs'

const log = (msg) => process.stderr.write(`[test] ${msg}\n`)

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

let cluster
let adminUrl = process.env.TEST_DATABASE_URL
if (!adminUrl) {
  cluster = await startPostgis({ log })
  adminUrl = cluster.url
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cluster.stop(); process.exit(130) })
} else {
  log(`using TEST_DATABASE_URL`)
}

const template = `sr_template_${randomBytes(4).toString('hex')}`
let code = 1
try {
  await admin(adminUrl, `CREATE DATABASE ${template}`)
  const migrated = spawnSync(process.execPath, ['dist/cli.js', 'migrate'], {
    env: { ...process.env, DATABASE_URL: withDatabase(adminUrl, template) }, stdio: ['ignore', 'inherit', 'inherit']
  })
  if (migrated.status !== 0) throw new Error('migrating the template database failed')
  const tap = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TEST_ADMIN_URL: adminUrl, TEST_TEMPLATE_DB: template, NODE_ENV: 'test' }
  })
  code = await new Promise((resolve) => tap.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))))
} catch (err) {
  log(err.message)
} finally {
  if (cluster) cluster.stop()
  else await admin(adminUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {})
}
process.exit(code)
