#!/usr/bin/env node
// Ops commands: migrate; account add|list|disable|enable|passwd|unlock; source purge; backup and
// restore of the embedded database. Reads the same
// environment as the service, validated by the same schema (config.ts), and works on the
// PostGIS server at DATABASE_URL or, without it, on the embedded database in DATA_DIR (default
// ./data; the service must be stopped, as only one process may open it). Passwords come from standard input
// (--password-stdin), never from the command line.
import { parseArgs } from 'node:util'
import { Presets, SingleBar } from 'cli-progress'
import type { Kysely } from 'kysely'
import { classifyDbError, poolerHint } from './db/errors.js'
import { openDatabase } from './db/open.js'
import { DataDirInUseError, DataDirNotEmptyError, NoDatabaseError, backupEmbedded, restoreEmbedded } from './db/embedded.js'
import { ROLES, type Database, type Role } from './db/database.js'
import { type MigrationResult, migrate } from './db/migrate.js'
import { type Config, ConfigSchema, loadConfig } from './config.js'
import { insertAccount, listAccounts, setAccountDisabled, setAccountPassword } from './accounts/accounts.repository.js'
import { hashPassword, passwordProblem } from './accounts/passwords.js'
import { unlock } from './accounts/login-failures.repository.js'
import { applyConflictTolerance } from './sources/conflict-tolerance.repository.js'
import { purgeSource } from './sources/sources.repository.js'
import { sourceStore } from './sources/sources.store.js'
import { attributeSchemaStore } from './sources/attribute-schemas.store.js'
import { crsCatalogue } from './sources/crs.js'
import { EXPORT_FORMATS, type ExportFormat, exportSources, importSources } from './features/bulk.js'

/** The bars drawing on the terminal: each redraws on a timer, which keeps the process alive until stopped (stopBars). */
const bars = new Set<SingleBar>()

/** Stops the progress bars (their last line stays), before the command's own output and before exit. */
function stopBars (): void {
  for (const bar of bars) bar.stop()
  bars.clear()
}

/** A progress line on standard error when it is a terminal (cli-progress), a count every 10 s otherwise. */
function progressBar (what: string) {
  return (total: number | undefined) => {
    if (process.stderr.isTTY) {
      const bar = new SingleBar({ format: total !== undefined ? `{bar} {percentage}% | {value}/{total} ${what} | {speed}/s | ETA {eta_formatted}` : `{value} ${what} | {speed}/s`, stream: process.stderr, noTTYOutput: false }, Presets.shades_classic)
      const start = Date.now()
      bar.start(total ?? 0, 0, { speed: 0 })
      bars.add(bar)
      return { total, done: (n: number) => bar.update(n, { speed: Math.round(n * 1000 / Math.max(1, Date.now() - start)) }) }
    }
    let last = Date.now()
    return { total, done: (n: number) => { if (Date.now() - last > 10_000) { last = Date.now(); err(`${n} ${what}`) } } }
  }
}

const USAGE = `usage: source-registry <command>
  migrate                                   apply pending sql/ migrations
  account add --email E --org O --role R --password-stdin
                                            create an account (role: ${ROLES.join(' | ')})
  account list [--json]                     list accounts
  account disable --email E                 disable an account (its tokens stop within ACCOUNT_CACHE_TTL_SECONDS, default ${ConfigSchema.properties.ACCOUNT_CACHE_TTL_SECONDS.default} s)
  account enable --email E                  enable it again
  account passwd --email E --password-stdin set a new password (older tokens stop working)
  account unlock --email E | --address A    forget failed logins of an e-mail (and its address pairs) or of an address
  source purge --id ID --reason R [--by WHO] erase a source and all its versions for good (audited in source_purges)
  backup --to FILE                          copy the embedded database (DATA_DIR) to a file; the service must be stopped
  restore --from FILE                       make the embedded database in a new DATA_DIR from such a file
  export --org O --format fgb|geojsonseq|ndjson|csv --to FILE [--filter CQL2] [--crs URI|EPSG:n]
                                            write an organisation's sources (--org all: every one) to a file
  import --as EMAIL --from FILE [--batch N] store the features of a GeoJSONSeq/NDJSON or FlatGeobuf file as that
                                            account, with the POST rules; resumes from FILE.progress;
                                            exit 3 when some were refused (each named on standard error)
environment: DATABASE_URL (a PostGIS server), or DATA_DIR (the embedded database, default ./data)`

class UsageError extends Error {}

/** The exit status of a command that ran but did not do everything (import: 3 when features were refused). */
let exitCode = 0

const out = (text: string): void => { process.stdout.write(`${text}\n`) }
const err = (text: string): void => { process.stderr.write(`${text}\n`) }

async function readPassword (): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('--password-stdin expects the password on standard input (e.g. printf %s "$PW" | …)')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
  const problem = passwordProblem(password)
  if (problem !== undefined) throw new UsageError(problem)
  return password
}

function need (value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`${flag} is required`)
  return value.trim()
}

/**
 * Opens the database on first use (db/open.ts, as the service does), so usage errors are
 * reported without opening it, and says on standard error which database it is (never a
 * password). Only commands that create data may create an embedded database; the others say
 * there is none.
 */
class Connection {
  private db?: Kysely<Database>
  /** What opening the embedded database applied (it migrates on every open, as the service does). */
  opened?: MigrationResult

  constructor (readonly config: Config) {}

  async get ({ create = false }: { create?: boolean } = {}): Promise<Kysely<Database>> {
    if (this.db !== undefined) return this.db
    const opened = await openDatabase(this.config, { create, poolMax: 2 })
    err(`database: ${opened.description}`)
    this.db = opened.db
    if (opened.kind === 'embedded') {
      this.opened = await migrate(this.db)
      if (this.opened.applied.length > 0) err(`applied ${this.opened.applied.join(', ')}`)
    }
    return this.db
  }

  async close (): Promise<void> { await this.db?.destroy() }
}

async function run (conn: Connection, argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      address: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      json: { type: 'boolean' },
      id: { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      to: { type: 'string' },
      from: { type: 'string' },
      format: { type: 'string' },
      filter: { type: 'string' },
      as: { type: 'string' },
      batch: { type: 'string' },
      crs: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  const [command, sub] = positionals
  if (values.help === true || command === undefined) { out(USAGE); return }

  if (command === 'migrate') {
    const db = await conn.get({ create: true })
    // The embedded database has just been migrated by opening it: report that, not a second run.
    const { applied, skipped } = conn.opened ?? await migrate(db)
    out(applied.length === 0 ? `database is up to date (${skipped.length} migrations already applied)` : `applied ${applied.join(', ')}`)
    const tolerance = await applyConflictTolerance(db, conn.config.CONFLICT_TOLERANCE_M)
    if (tolerance.changed) out(`conflict tolerance set to ${conn.config.CONFLICT_TOLERANCE_M} m (CONFLICT_TOLERANCE_M): ${tolerance.pairs} conflicting pairs`)
    return
  }
  if (command === 'backup' || command === 'restore') {
    if (conn.config.DATABASE_URL !== undefined) throw new UsageError(`${command} is for the embedded database; for a PostGIS server use pg_dump -Fc and pg_restore (docs/operations.md)`)
    if (command === 'backup') {
      const file = need(values.to, '--to')
      const bytes = await backupEmbedded(conn.config.DATA_DIR, file)
      out(`backed up ${conn.config.DATA_DIR} to ${file} (${bytes} bytes)`)
    } else {
      const file = need(values.from, '--from')
      await restoreEmbedded(conn.config.DATA_DIR, file)
      out(`restored ${file} into ${conn.config.DATA_DIR}`)
    }
    return
  }
  if (command === 'export') {
    const format = need(values.format, '--format')
    if (format === 'gpkg') throw new UsageError('GeoPackage is not offered (no maintained JavaScript writer without a native build): export fgb, then ogr2ogr -f GPKG out.gpkg FILE.fgb')
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`)
    const org = need(values.org, '--org')
    const to = need(values.to, '--to')
    const store = sourceStore(await conn.get())
    const count = await exportSources(store, org === 'all' ? 'all' : { organisation: org }, { format: format as ExportFormat, to, filter: values.filter, crs: values.crs, catalogue: crsCatalogue(conn.config.CRS_EPSG.split(',').map(Number)) }, progressBar('exported'))
    stopBars()
    out(`exported ${count} source${count === 1 ? '' : 's'} to ${to}`)
    return
  }
  if (command === 'import') {
    const email = need(values.as, '--as')
    const from = need(values.from, '--from')
    const db = await conn.get()
    const account = (await listAccounts(db)).find((a) => a.email === email)
    if (account === undefined) throw new UsageError(`no account with e-mail ${email}`)
    if (account.disabled || !['admin', 'editor'].includes(account.role)) throw new UsageError(`${email} may not write (${account.disabled ? 'disabled' : account.role})`)
    let shown = 0
    const bar = progressBar('read')(undefined)
    const report = await importSources(sourceStore(db), attributeSchemaStore(db, { concurrentIndexes: false }), { organisation: account.organisation, accountId: account.id }, from, {
      batchSize: values.batch === undefined ? undefined : Number(values.batch),
      onBatch: (r) => {
        bar.done(r.read)
        for (; shown < r.refused.length; shown++) { const x = r.refused[shown]!; err(`refused feature ${x.index}${x.feature_id !== undefined ? ` (${x.feature_id})` : ''}: ${x.reason}`) }
      }
    })
    stopBars()
    out(`imported ${report.stored}, already stored ${report.already}, refused ${report.refused.length}${report.skipped > 0 ? `, ${report.skipped} settled by an earlier run` : ''}`)
    if (report.refused.length > 0) exitCode = 3
    return
  }
  if (command === 'source') {
    if (sub !== 'purge') throw new UsageError(`unknown source command "${sub ?? ''}" (purge)`)
    const id = need(values.id, '--id')
    const reason = need(values.reason, '--reason')
    const by = values.by?.trim() || process.env.USER || 'cli'
    const versions = await purgeSource(await conn.get(), id, reason, by)
    if (versions === 0) throw new UsageError(`no source with id ${id}`)
    out(`purged ${id}: the source and ${versions} version${versions === 1 ? '' : 's'} erased; recorded in source_purges`)
    return
  }
  if (command !== 'account') throw new UsageError(`unknown command "${command}"`)

  switch (sub) {
    case 'add': {
      const email = need(values.email, '--email')
      const organisation = need(values.org, '--org')
      const role = need(values.role, '--role') as Role
      if (!ROLES.includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`)
      if (values['password-stdin'] !== true) throw new UsageError('--password-stdin is required (the password is read from standard input)')
      const password = await readPassword()
      const account = await insertAccount(await conn.get({ create: true }), { email, organisation, role, passwordHash: await hashPassword(password) })
      out(`created ${account.role} ${account.email} (${account.organisation}), id ${account.id}`)
      return
    }
    case 'list': {
      const accounts = await listAccounts(await conn.get())
      if (values.json === true) { out(JSON.stringify(accounts, null, 2)); return }
      out(['email', 'role', 'organisation', 'status', 'created_at'].join('\t'))
      for (const a of accounts) out([a.email, a.role, a.organisation, a.disabled ? 'disabled' : 'active', a.created_at.toISOString()].join('\t'))
      return
    }
    case 'disable':
    case 'enable': {
      const email = need(values.email, '--email')
      if (!await setAccountDisabled(await conn.get(), email, sub === 'disable')) throw new UsageError(`no account with e-mail ${email}`)
      out(`${sub}d ${email}`)
      return
    }
    case 'passwd': {
      const email = need(values.email, '--email')
      if (values['password-stdin'] !== true) throw new UsageError('--password-stdin is required (the password is read from standard input)')
      const password = await readPassword()
      if (!await setAccountPassword(await conn.get(), email, await hashPassword(password))) throw new UsageError(`no account with e-mail ${email}`)
      out(`password changed for ${email}; tokens issued before now no longer work`)
      return
    }
    case 'unlock': {
      if ((values.email === undefined) === (values.address === undefined)) throw new UsageError('account unlock takes --email E or --address A')
      const by = values.email !== undefined ? { email: need(values.email, '--email') } : { address: need(values.address, '--address') }
      const removed = await unlock(await conn.get(), by)
      out(`cleared ${removed} failed-login count${removed === 1 ? '' : 's'} for ${by.email ?? by.address as string}`)
      return
    }
    default:
      throw new UsageError(`unknown account command "${sub ?? ''}" (add, list, disable, enable, passwd, unlock)`)
  }
}

async function main (): Promise<number> {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) { out(USAGE); return argv.length === 0 ? 2 : 0 }
  let config: Config
  try {
    config = loadConfig()
  } catch (e) {
    err(`error: ${(e as Error).message}`)
    return 2
  }
  const conn = new Connection(config)
  try {
    await run(conn, argv)
    return exitCode
  } catch (e) {
    stopBars()
    // A named constraint of sql/ says what was wrong, in the words the API uses (db/errors.ts).
    const db = classifyDbError(e)
    const rule = db?.kind === 'constraint' ? db.rule : undefined
    const usage = rule !== undefined || e instanceof UsageError || e instanceof DataDirInUseError || e instanceof DataDirNotEmptyError || e instanceof NoDatabaseError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
    const hint = poolerHint(e)
    err(`error: ${rule?.message ?? (e as Error).message}${hint !== undefined ? ` (${hint})` : ''}`)
    return usage ? 2 : 1
  } finally {
    await conn.close()
  }
}

process.exitCode = await main()
