// README.md's "Try it" snippet, taken from the README as it is and run with bash and curl against
// the service in its own process, as a reader pastes it (BASE and PW filled in): with the right
// password it creates, reads and deletes a source; with a wrong one it shows the 401 of the login
// and stops there (no request after it, no TOKEN=undefined), and the shell it was pasted into
// goes on. Both backends.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, createDatabase, startService, targetConfig } from '../helper.js'

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8')
const hasCurl = spawnSync('curl', ['--version']).status === 0

/** The first ```sh block under the "## Try it" heading. */
function trySnippet (): string {
  const section = README.slice(README.indexOf('\n## Try it\n'))
  const block = /\n```sh\n([\s\S]*?)\n```\n/.exec(section)?.[1]
  if (block === undefined) throw new Error('README.md has no ```sh block under "## Try it"')
  return block
}

if (!hasCurl && process.env.CI !== 'true') {
  t.plan(0, 'curl is not installed')
} else {
  const snippet = trySnippet()
  const password = 'the printed password, pasted'
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  await addAccount(db, { role: 'admin', organisation: 'hq', email: 'admin@localhost', password })
  await db.destroy()
  const service = await startService(t, target)

  /** The snippet as pasted, with BASE and PW filled in, then a line of the same shell after it. */
  const paste = (pw: string) => {
    t.match(snippet, /^BASE=.*$/m)
    t.match(snippet, /^PW='PASTE-THE-PRINTED-PASSWORD'$/m)
    const filled = snippet.replace(/^BASE=.*$/m, `BASE=${service.base}`).replace(/^PW=.*$/m, `PW='${pw}'`)
    const r = spawnSync('bash', ['-c', `${filled}\necho "after the snippet: $?"`], { encoding: 'utf8', timeout: 60_000 })
    return { out: r.stdout, err: r.stderr, status: r.status }
  }

  t.test('the right password: created, read as a Feature, deleted', async (t) => {
    const { out, err, status } = paste(password)
    t.equal(status, 0, err)
    const [feature, deleted, after] = out.trim().split('\n')
    t.match(JSON.parse(feature ?? '{}'), { type: 'Feature', id: /^src_/, properties: { feature_id: 'field-7', version: 1 } }, 'the GET: the source as a Feature')
    t.match(JSON.parse(deleted ?? '{}'), { message: /^Source src_\w+ deleted\.$/ }, 'the DELETE')
    t.equal(after, 'after the snippet: 0')
    t.notMatch(out, /failed|undefined/)
  })

  t.test('a wrong password: the 401 of the login and nothing after it; the shell goes on', async (t) => {
    await new Promise((resolve) => setTimeout(resolve, 500)) // the log lines of the run before
    const from = service.lines.length
    const { out, status } = paste('not the password')
    t.equal(status, 0, 'the pasting shell is not closed')
    const lines = out.trim().split('\n')
    t.equal(lines.length, 2, out)
    t.match(lines[0], /^login failed: \{"status":401,.*"code":"INVALID_CREDENTIALS"/, 'the service\'s own 401 body')
    t.equal(lines[1], 'after the snippet: 1', 'the subshell stopped with 1; the shell it was pasted into went on')
    t.notMatch(out, /undefined|create failed/)
    await new Promise((resolve) => setTimeout(resolve, 300))
    // (The response check's own GET /openapi.json aside.)
    const urls = service.lines.slice(from).flatMap((l) => /"url":"([^"]+)"/.exec(l)?.[1] ?? []).filter((url) => url !== '/openapi.json')
    t.same(urls, ['/token'], 'no request after the failed login')
  })
}
