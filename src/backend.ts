// Opens the database the configuration asks for. With DATABASE_URL: a PostGIS server, whose
// migrations stay an explicit `make migrate`. Without it: the embedded PostGIS in DATA_DIR,
// migrated here at start-up, with a JWT secret generated once and kept beside the data, and a
// first admin account when there is none.
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Kysely } from 'kysely'
import type { AppConfig, Config } from './config.js'
import { connect, redactUrl } from './db/connect.js'
import type { Database } from './db/database.js'
import { openEmbedded } from './db/embedded.js'
import { migrate } from './db/migrate.js'
import { hasAnyAccount, insertAccount } from './accounts/accounts.repository.js'
import { hashPassword } from './accounts/passwords.js'

interface Log { info: (obj: object, msg: string) => void, warn: (obj: object, msg: string) => void }

export interface Backend {
  db: Kysely<Database>
  config: AppConfig
  kind: 'server' | 'embedded'
  /** Set when the first admin's password was generated: shown once to the operator. */
  generatedAdmin?: { email: string, password: string }
}

async function embeddedSecret (dir: string): Promise<string> {
  const file = join(dir, 'jwt-secret')
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err
  }
  const secret = randomBytes(48).toString('base64')
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' })
  return secret
}

async function firstAdmin (db: Kysely<Database>, config: Config): Promise<Backend['generatedAdmin'] | undefined> {
  if (await hasAnyAccount(db)) return undefined
  const email = config.ADMIN_EMAIL ?? 'admin@localhost'
  const password = config.ADMIN_PASSWORD ?? randomBytes(18).toString('base64url')
  await insertAccount(db, { email, role: 'admin', organisation: config.ADMIN_ORG, passwordHash: await hashPassword(password) })
  return config.ADMIN_PASSWORD === undefined ? { email, password } : undefined
}

export async function openBackend (config: Config, log: Log): Promise<Backend> {
  if (config.DATABASE_URL !== undefined) {
    const db = connect({
      url: config.DATABASE_URL,
      poolMax: config.DB_POOL_MAX,
      connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      onPoolError: (err) => log.warn({ err }, 'database connection lost')
    })
    log.info({ backend: 'server', database: redactUrl(config.DATABASE_URL) }, 'using the PostGIS server at DATABASE_URL (migrations: make migrate)')
    return { db, config: config as AppConfig, kind: 'server' }
  }
  const started = performance.now()
  const firstStart = !existsSync(join(config.DATA_DIR, 'pgdata'))
  log.info({ dataDir: resolve(config.DATA_DIR), firstStart }, firstStart
    ? 'embedded PostGIS: creating the database (first start; about half a minute)'
    : 'embedded PostGIS: opening the database')
  const embedded = await openEmbedded(config.DATA_DIR)
  try {
    const opened = performance.now()
    const { applied } = await migrate(embedded.db, undefined, (name) => {
      log.info({ migration: name, elapsedMs: Math.round(performance.now() - started) }, `embedded PostGIS: applying ${name}${name.startsWith('001_') ? ' (installs PostGIS: the slow step)' : ''}`)
    })
    const jwtSecret = config.JWT_SECRET ?? await embeddedSecret(embedded.dir)
    const generatedAdmin = await firstAdmin(embedded.db, config)
    if (embedded.tookOverFromPid !== undefined) {
      log.warn({ dataDir: embedded.dir, previousPid: embedded.tookOverFromPid }, 'took over the data directory from a process that had died holding it')
    }
    log.info({
      backend: 'embedded',
      dataDir: embedded.dir,
      migrationsApplied: applied,
      openMs: Math.round(opened - started),
      readyMs: Math.round(performance.now() - started)
    }, `using the embedded PostGIS (PGlite) in ${embedded.dir}`)
    return { db: embedded.db, config: Object.freeze({ ...config, JWT_SECRET: jwtSecret }), kind: 'embedded', generatedAdmin }
  } catch (err) {
    await embedded.db.destroy()
    throw err
  }
}
