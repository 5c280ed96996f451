// The ops CLI, run as ops run it: the built dist/cli.js, a password on standard input.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { openEmbedded } from '../src/db/embedded.js'
import { listMigrations } from '../src/db/migrate.js'
import { recordFailure } from '../src/accounts/login-failures.repository.js'
import { bootstrap } from '../src/bootstrap.js'
import { loadConfig } from '../src/config.js'
import { backend, createDatabase, directDb, tempDir } from './helper.js'

const target = await createDatabase(t, { empty: true })
const targetEnv = backend === 'server' ? { DATABASE_URL: target } : { DATA_DIR: target }

function cli (args: string[], input?: string, env: Record<string, string | undefined> = targetEnv) {
  const r = spawnSync(process.execPath, ['dist/cli.js', ...args], { input: input ?? '', encoding: 'utf8', env: { PATH: process.env.PATH, ...env } })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

t.test('migrate says which database and what it applied, then that nothing is pending', async (t) => {
  const names = (await listMigrations()).map((m) => m.name)
  const first = cli(['migrate'])
  t.equal(first.code, 0, first.stderr)
  t.equal(first.stdout, `applied ${names.join(', ')}\n`, 'on a new database, every file is named as applied')
  t.match(first.stderr, backend === 'server' ? /^database: PostGIS server postgres:\/\/postgres@127\.0\.0\.1:\d+\/sr_test_/ : `database: embedded PostGIS in ${target}`)
  const second = cli(['migrate'])
  t.equal(second.code, 0)
  t.equal(second.stdout, `database is up to date (${names.length} migrations already applied)\n`)
})

t.test('migrate applies CONFLICT_TOLERANCE_M, once; a service with another value refuses to start', async (t) => {
  const five = cli(['migrate'], undefined, { ...targetEnv, CONFLICT_TOLERANCE_M: '5' })
  t.equal(five.code, 0, five.stderr)
  t.match(five.stdout, /conflict tolerance set to 5 m \(CONFLICT_TOLERANCE_M\): 0 conflicting pairs\n$/)
  const again = cli(['migrate'], undefined, { ...targetEnv, CONFLICT_TOLERANCE_M: '5' })
  t.notMatch(again.stdout, /tolerance/, 'unchanged: nothing recomputed, nothing said')
  t.equal(cli(['migrate'], undefined, { ...targetEnv, CONFLICT_TOLERANCE_M: '-1' }).code, 2, 'a negative tolerance is a configuration error')
  if (backend === 'server') {
    const config = loadConfig({ DATABASE_URL: target, JWT_SECRET: 'x'.repeat(32) })
    await t.rejects(bootstrap(config, { info: () => {}, warn: () => {} }), /CONFLICT_TOLERANCE_M is 9 but the database's conflicts were computed with 5 m: run `make migrate` with CONFLICT_TOLERANCE_M=9/)
  }
  const back = cli(['migrate'])
  t.match(back.stdout, /conflict tolerance set to 9 m/)
})

t.test('no password of DATABASE_URL is ever printed', async (t) => {
  const r = cli(['account', 'list'], undefined, { DATABASE_URL: 'postgres://someone:s3cret-pw@127.0.0.1:1/none' })
  t.equal(r.code, 1)
  t.match(r.stderr, /^database: PostGIS server postgres:\/\/someone@127\.0\.0\.1:1\/none/)
  t.notMatch(r.stdout + r.stderr, /s3cret-pw/)
})

t.test('a read-only command never creates an embedded database', async (t) => {
  const parent = await tempDir(t, 'sr-cli-none-')
  const missing = join(parent, 'data')
  for (const args of [['account', 'list'], ['account', 'disable', '--email', 'a@example.org'], ['account', 'unlock', '--email', 'a@example.org']]) {
    const r = cli(args, undefined, { DATA_DIR: missing })
    t.equal(r.code, 2, args.join(' '))
    t.match(r.stderr, `error: there is no embedded database in ${missing} (DATA_DIR)`)
    t.notOk(existsSync(missing), 'nothing was created')
  }
})

t.test('account add / list / disable / enable / passwd', async (t) => {
  const add = cli(['account', 'add', '--email', 'Ops@Example.org', '--org', 'acme', '--role', 'admin', '--password-stdin'], 'a long enough password\n')
  t.equal(add.code, 0, add.stderr)
  t.match(add.stdout, /created admin Ops@Example\.org \(acme\)/)
  t.notMatch(add.stdout + add.stderr, /a long enough password/, 'the password is never echoed')

  const list = cli(['account', 'list'])
  t.equal(list.code, 0)
  t.match(list.stdout, /Ops@Example\.org\tadmin\tacme\tactive/)
  const json = JSON.parse(cli(['account', 'list', '--json']).stdout)
  t.equal(json.length, 1)
  t.notOk('password_hash' in json[0], 'no hashes in the listing')

  t.equal(cli(['account', 'disable', '--email', 'ops@example.org']).code, 0)
  t.match(cli(['account', 'list']).stdout, /\tdisabled\t/)
  t.equal(cli(['account', 'enable', '--email', 'ops@example.org']).code, 0)
  const pw = cli(['account', 'passwd', '--email', 'ops@example.org', '--password-stdin'], 'another long password')
  t.equal(pw.code, 0, pw.stderr)
  t.match(pw.stdout, /password changed/)
})

t.test('account unlock clears failed-login counts by e-mail or by address', async (t) => {
  const db = await directDb(t, target)
  await recordFailure(db, [
    { key: 'pair:192.0.2.1 ops@example.org', email: 'ops@example.org', address: '192.0.2.1' },
    { key: 'address:192.0.2.1', email: null, address: '192.0.2.1' },
    { key: 'email:ops@example.org', email: 'ops@example.org', address: null }
  ], 900)
  await db.destroy()
  const byEmail = cli(['account', 'unlock', '--email', 'Ops@Example.org'])
  t.equal(byEmail.code, 0, byEmail.stderr)
  t.match(byEmail.stdout, /cleared 2 failed-login counts for Ops@Example\.org/)
  const byAddress = cli(['account', 'unlock', '--address', '192.0.2.1'])
  t.match(byAddress.stdout, /cleared 1 failed-login count for 192\.0\.2\.1/)
  t.equal(cli(['account', 'unlock']).code, 2, 'one of --email or --address is required')
})

t.test('clear errors and non-zero exits', async (t) => {
  const cases: Array<[string[], string | undefined, RegExp]> = [
    [['account', 'add', '--email', 'ops@example.org', '--org', 'acme', '--role', 'viewer', '--password-stdin'], 'a long enough password', /already exists/],
    [['account', 'add', '--email', 'x@example.org', '--org', 'acme', '--role', 'root', '--password-stdin'], 'a long enough password', /--role must be one of admin, editor, viewer/],
    [['account', 'add', '--email', 'x@example.org', '--org', 'acme', '--role', 'viewer', '--password-stdin'], 'short', /at least 12 characters/],
    [['account', 'add', '--email', 'x@example.org', '--role', 'viewer', '--password-stdin'], 'a long enough password', /--org is required/],
    [['account', 'add', '--email', 'not-an-email', '--org', 'acme', '--role', 'viewer', '--password-stdin'], 'a long enough password', /not an e-mail address/],
    [['account', 'add', '--email', 'x@example.org', '--org', 'acme', '--role', 'viewer'], undefined, /--password-stdin is required/],
    [['account', 'disable', '--email', 'nobody@example.org'], undefined, /no account with e-mail/],
    [['account', 'passwd', '--email', 'nobody@example.org', '--password-stdin'], 'a long enough password', /no account with e-mail/],
    [['account', 'frobnicate'], undefined, /unknown account command/],
    [['launch'], undefined, /unknown command/],
    [['account', 'list', '--bogus'], undefined, /Unknown option/]
  ]
  for (const [args, input, message] of cases) {
    const r = cli(args, input)
    t.not(r.code, 0, args.join(' '))
    t.match(r.stderr, message, args.join(' '))
  }
  const inUse = await tempDir(t, 'sr-cli-lock-')
  const holder = await openEmbedded(inUse)
  const locked = cli(['account', 'list'], undefined, { DATA_DIR: inUse })
  await holder.db.destroy()
  t.equal(locked.code, 2, 'an embedded data directory held by another process')
  t.match(locked.stderr, /is in use by another process/)
  const down = cli(['migrate'], undefined, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' })
  t.equal(down.code, 1)
  t.match(down.stderr, /^error: .*ECONNREFUSED/m)
})
