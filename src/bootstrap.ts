// Start-up, before the app exists: open the database (db/open.ts) and make the configuration
// complete. On the PostGIS server, migrations stay an explicit `make migrate` and JWT_SECRET must
// be given. On the embedded PostGIS (no DATABASE_URL), the database migrates itself, a JWT secret
// is generated once and kept beside the data, and a first admin is created when there is none.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Kysely } from 'kysely'
import { type AppConfig, type Config, ConfigError } from './config.js'
import type { Database } from './db/database.js'
import { migrate } from './db/migrate.js'
import { type OpenedDatabase, openDatabase } from './db/open.js'
import { hasAnyAccount, insertAccount } from './accounts/accounts.repository.js'
import { hashPassword } from './accounts/passwords.js'
import { applyConflictTolerance, storedConflictTolerance } from './sources/conflict-tolerance.repository.js'

interface Log { info: (obj: object, msg: string) => void, warn: (obj: object, msg: string) => void }

export interface Started {
  db: Kysely<Database>
  /** The configuration with its JWT secret: what buildApp takes. */
  config: AppConfig
  kind: OpenedDatabase['kind']
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

async function firstAdmin (db: Kysely<Database>, config: Config): Promise<Started['generatedAdmin'] | undefined> {
  if (await hasAnyAccount(db)) return undefined
  const email = config.ADMIN_EMAIL ?? 'admin@localhost'
  const password = config.ADMIN_PASSWORD ?? randomBytes(18).toString('base64url')
  await insertAccount(db, { email, role: 'admin', organisation: config.ADMIN_ORG, passwordHash: await hashPassword(password) })
  return config.ADMIN_PASSWORD === undefined ? { email, password } : undefined
}

/**
 * On the server backend the tolerance is applied by `make migrate`; a service configured with
 * another one would answer conflicts computed with a rule it does not state, so it refuses to
 * start. A database it cannot reach yet is not a reason to refuse (/ready says 503 until it is).
 */
async function checkConflictTolerance (db: Kysely<Database>, config: Config, log: Log): Promise<void> {
  let stored: number | undefined
  try {
    stored = await storedConflictTolerance(db)
  } catch (err) {
    log.warn({ err }, 'could not read the conflict tolerance from the database; not checked')
    return
  }
  if (stored !== undefined && stored !== config.CONFLICT_TOLERANCE_M) {
    await db.destroy()
    throw new ConfigError(`invalid configuration: CONFLICT_TOLERANCE_M is ${config.CONFLICT_TOLERANCE_M} but the database's conflicts were computed with ${stored} m: run \`make migrate\` with CONFLICT_TOLERANCE_M=${config.CONFLICT_TOLERANCE_M} (it computes every conflict again), or start with CONFLICT_TOLERANCE_M=${stored}`)
  }
}

export interface BootstrapOptions {
  /** Embedded: the migrated template a first start copies (default: the one `npm run embedded` made). */
  template?: string
}

export async function bootstrap (config: Config, log: Log, options: BootstrapOptions = {}): Promise<Started> {
  if (config.DATABASE_URL !== undefined) {
    const jwtSecret = config.JWT_SECRET
    if (jwtSecret === undefined) {
      throw new ConfigError('invalid configuration: env must have required property \'JWT_SECRET\' when DATABASE_URL is set (at least 32 bytes: openssl rand -base64 48)')
    }
    const opened = await openDatabase(config, {
      onPoolError: (err) => log.warn({ err }, 'database connection lost'),
      onPrimary: (host, previous) => {
        if (previous === undefined) log.info({ primary: host }, `database primary: ${host}`)
        else log.warn({ primary: host, previous }, `database failover: writes now go to ${host} (was ${previous})`)
      },
      onNoHost: (message) => log.warn({ reason: message }, 'database: no primary found yet')
    })
    log.info({ backend: 'server', database: opened.description }, `using the ${opened.description} (migrations: make migrate)`)
    await checkConflictTolerance(opened.db, config, log)
    return { db: opened.db, kind: 'server', config: Object.freeze({ ...config, JWT_SECRET: jwtSecret }) }
  }

  const started = performance.now()
  const firstStart = !existsSync(join(config.DATA_DIR, 'pgdata'))
  // Loaded here, not above: the server backend never needs PGlite's modules.
  const template = options.template ?? (await import('./db/embedded-template.js')).TEMPLATE_DIR
  log.info({ dataDir: resolve(config.DATA_DIR), firstStart }, firstStart
    ? 'embedded PostGIS: creating the database (first start)'
    : 'embedded PostGIS: opening the database')
  const opened = await openDatabase(config, { sqlPort: config.EMBEDDED_SQL_PORT, template })
  const dir = opened.dir as string
  try {
    if (opened.tookOverFromPid !== undefined) {
      log.warn({ dataDir: dir, previousPid: opened.tookOverFromPid }, 'took over the data directory from a process that had died holding it')
    }
    const made = opened.created?.template
    if (made?.usable === true) {
      log.info({ template: made.dir, pending: made.pending }, `embedded PostGIS: copied the migrated template${made.pending.length > 0 ? `; ${made.pending.length} newer file(s) of sql/ to apply` : ''}`)
    } else if (made !== undefined) {
      log.info({ template: made.dir, reason: made.reason }, `embedded PostGIS: not using the template (${made.reason}): creating the database and installing PostGIS, about half a minute`)
    }
    const openMs = Math.round(performance.now() - started)
    const { applied } = await migrate(opened.db, undefined, (name) => {
      log.info({ migration: name, elapsedMs: Math.round(performance.now() - started) }, `embedded PostGIS: applying ${name}${name.startsWith('001_') ? ' (installs PostGIS: the slow step)' : ''}`)
    })
    const tolerance = await applyConflictTolerance(opened.db, config.CONFLICT_TOLERANCE_M)
    if (tolerance.changed) log.info({ toleranceM: config.CONFLICT_TOLERANCE_M, pairs: tolerance.pairs }, `conflict tolerance set to ${config.CONFLICT_TOLERANCE_M} m: every conflict computed again`)
    const jwtSecret = config.JWT_SECRET ?? await embeddedSecret(dir)
    const generatedAdmin = await firstAdmin(opened.db, config)
    log.info({ backend: 'embedded', dataDir: dir, fromTemplate: made?.usable === true, migrationsApplied: applied, lazyPostgis: opened.lazyPostgis, openMs, readyMs: Math.round(performance.now() - started) }, `using the ${opened.description}`)
    if (opened.sqlPort !== undefined) {
      log.warn({ embeddedSqlPort: opened.sqlPort }, `embedded PostGIS served to PostgreSQL clients on 127.0.0.1:${opened.sqlPort} (EMBEDDED_SQL_PORT): whoever connects from this host is its superuser, with no password (psql -h 127.0.0.1 -p ${opened.sqlPort} -U postgres)`)
    }
    return { db: opened.db, kind: 'embedded', config: Object.freeze({ ...config, JWT_SECRET: jwtSecret }), generatedAdmin }
  } catch (err) {
    await opened.db.destroy()
    throw err
  }
}
