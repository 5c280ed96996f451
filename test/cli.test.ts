// The ops CLI, run as ops run it: the built dist/cli.js, a password on standard input.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openEmbedded } from '../src/db/embedded.js'
import { backend, createDatabase } from './helper.js'

const target = await createDatabase(t, { empty: true })
const targetEnv = backend === 'server' ? { DATABASE_URL: target } : { DATA_DIR: target }

function cli (args: string[], input?: string, env: Record<string, string | undefined> = targetEnv) {
  const r = spawnSync(process.execPath, ['dist/cli.js', ...args], { input: input ?? '', encoding: 'utf8', env: { PATH: process.env.PATH, ...env } })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

t.test('migrate, then migrate again', async (t) => {
  const first = cli(['migrate'])
  t.equal(first.code, 0, first.stderr)
  // The embedded backend migrates whenever it opens, so its explicit migrate finds nothing to do.
  t.match(first.stdout, backend === 'server' ? /applied 001_extensions\.sql, 002_accounts\.sql, 003_sources\.sql, 004_source_area\.sql/ : /up to date \(4 migrations already applied\)/)
  const second = cli(['migrate'])
  t.equal(second.code, 0)
  t.match(second.stdout, /up to date \(4 migrations already applied\)/)
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
  const inUse = await mkdtemp(join(tmpdir(), 'sr-cli-lock-'))
  t.teardown(() => rm(inUse, { recursive: true, force: true }))
  const holder = await openEmbedded(inUse)
  const locked = cli(['account', 'list'], undefined, { DATA_DIR: inUse })
  await holder.db.destroy()
  t.equal(locked.code, 2, 'an embedded data directory held by another process')
  t.match(locked.stderr, /is in use by another process/)
  const down = cli(['migrate'], undefined, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' })
  t.equal(down.code, 1)
  t.match(down.stderr, /^error: .*ECONNREFUSED/)
})
