// Two instances of the service (their own processes) on one database and one Redis, as behind a
// load balancer: the login throttle counts failures across both, the rate limit is shared, a
// source created on one is read and deleted on the other, account changes (disable, role,
// password) reach both within ACCOUNT_CACHE_TTL_SECONDS, the rate limit fails open while Redis
// is away (and holds again when it is back), and killing one instance leaves the other serving.
import t from 'tap'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { createInterface } from 'node:readline'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { setAccountPassword } from '../../src/accounts/accounts.repository.js'
import { hashPassword } from '../../src/accounts/passwords.js'
import { addAccount, backend, collection, createDatabase, feature, freePort, startService, targetConfig } from '../helper.js'

const hasRedis = spawnSync('redis-server', ['--version']).status === 0
if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): an embedded data directory serves one process')
} else if (!hasRedis && process.env.CI !== 'true') {
  t.plan(0, 'redis-server is not installed (apt-get install redis-server; .ci/run installs it)')
} else {
  await instances()
}

/** A throwaway redis-server on a loopback port, no persistence; stopped on teardown. */
async function startRedis (port: number): Promise<ChildProcess> {
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start')), 10_000)
    createInterface({ input: redis.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (/Ready to accept connections/.test(line)) { clearTimeout(timer); resolve() }
    })
  })
  return redis
}

async function instances (): Promise<void> {
  const redisPort = await freePort()
  let redis = await startRedis(redisPort)
  t.teardown(() => { redis.kill('SIGKILL') })

  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
  t.teardown(() => db.destroy())
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const victim = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const limited = await addAccount(db, { role: 'viewer', organisation: 'org-a' })
  const leaving = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const survivor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const changing = await addAccount(db, { role: 'editor', organisation: 'org-a' })

  // A Redis command that takes longer than REDIS_TIMEOUT_MS lets the request through (fail open):
  // on a loaded test machine the default 500 ms made the limits below pass requests they count.
  const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_TIMEOUT_MS: '3000', RATE_LIMIT_MAX: '40', LOGIN_MAX_FAILURES: '5', ACCOUNT_CACHE_TTL_SECONDS: '1' }
  const [a, b] = await Promise.all([startService(t, target, env), startService(t, target, env)])
  if (a === undefined || b === undefined) throw new Error('two instances')
  const login = async (base: string, email: string, password: string) =>
    fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
  const tokenOf = async (base: string, account: { email: string, password: string }) => ((await (await login(base, account.email, account.password)).json()) as { token: string }).token
  const get = async (base: string, path: string, token: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } })

  t.test('brute force alternating between the instances is throttled after LOGIN_MAX_FAILURES in total', async (t) => {
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push((await login((i % 2 === 0 ? a : b).base, victim.email, 'wrong password, try again')).status)
    t.same(statuses, [401, 401, 401, 401, 401, 429, 429, 429])
    t.equal((await login(b.base, victim.email, victim.password)).status, 429, 'the pair stays refused on either, even with the right password')
  })

  t.test('a source created on one is read and deleted on the other', async (t) => {
    const token = await tokenOf(a.base, editor)
    const created = await fetch(`${a.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature('shared-1'))) })
    t.equal(created.status, 201)
    const id = ((await created.json()) as { sources: Array<{ id: string }> }).sources[0]?.id as string
    t.equal((await get(b.base, `/sources/?id=${id}`, token)).status, 200)
    t.equal((await fetch(`${b.base}/sources/?id=${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status, 200)
    t.equal((await get(a.base, `/sources/?id=${id}`, token)).status, 410, 'Gone on the first too')
  })

  t.test('the rate limit is shared: RATE_LIMIT_MAX requests in total, whichever instance answers', async (t) => {
    const token = await tokenOf(a.base, limited)
    const statuses: number[] = []
    for (let i = 0; i < 42; i++) statuses.push((await get((i % 2 === 0 ? a : b).base, '/collections/sources', token)).status)
    t.same(statuses.slice(0, 40).filter((s) => s !== 200), [], 'the first 40 pass')
    t.same(statuses.slice(40), [429, 429], 'then both instances refuse')
  })

  t.test('an account change reaches both instances within ACCOUNT_CACHE_TTL_SECONDS', async (t) => {
    const token = await tokenOf(a.base, leaving)
    t.same([(await get(a.base, '/collections/sources', token)).status, (await get(b.base, '/collections/sources', token)).status], [200, 200])
    await sql`UPDATE accounts SET disabled = true WHERE email = ${leaving.email}`.execute(db)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    t.same([(await get(a.base, '/collections/sources', token)).status, (await get(b.base, '/collections/sources', token)).status], [401, 401])
  })

  t.test('a role change and a password change reach both instances too', async (t) => {
    const token = await tokenOf(a.base, changing)
    const postOn = async (base: string, id: string) => (await fetch(`${base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature(id))) })).status
    t.same([await postOn(a.base, 'role-1'), await postOn(b.base, 'role-2')], [201, 201])
    await sql`UPDATE accounts SET role = 'viewer' WHERE email = ${changing.email}`.execute(db)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    t.same([await postOn(a.base, 'role-3'), await postOn(b.base, 'role-4')], [403, 403], 'now a viewer on both')
    await setAccountPassword(db, changing.email, await hashPassword('a brand new password 1234'))
    await new Promise((resolve) => setTimeout(resolve, 1500))
    t.same([(await get(a.base, '/collections/sources', token)).status, (await get(b.base, '/collections/sources', token)).status], [401, 401], 'tokens from before the password change')
  })

  t.test('Redis away: the rate limit fails open with a warning, logins still work; back: enforced again', async (t) => {
    const token = await tokenOf(a.base, editor)
    t.same([a, b].map((x) => x.lines.filter((l) => /redis unreachable/.test(l))), [[], []], 'no outage before this one (none at start-up)')
    // The warnings of this outage: the lines from here on.
    const [fromA, fromB] = [a.lines.length, b.lines.length]
    redis.kill('SIGKILL')
    await new Promise((resolve) => redis.once('exit', resolve))
    const statuses: number[] = []
    for (let i = 0; i < 60; i++) statuses.push((await get((i % 2 === 0 ? a : b).base, '/collections/sources', token)).status)
    t.same(statuses.filter((s) => s !== 200), [], '60 requests over the limit of 40 all pass while Redis is away')
    await a.waitFor(/redis unreachable/, undefined, fromA)
    t.equal((await login(b.base, editor.email, editor.password)).status, 200, 'the login throttle is in PostgreSQL, not Redis')
    redis = await startRedis(redisPort)
    await a.waitFor(/redis reachable again/, 10_000, fromA)
    await b.waitFor(/redis reachable again/, 10_000, fromB)
    const again: number[] = []
    for (let i = 0; i < 42; i++) again.push((await get((i % 2 === 0 ? a : b).base, '/collections/sources', token)).status)
    t.same(again.slice(40), [429, 429], 'a fresh Redis counts from zero, and limits again')
  })

  t.test('killing one instance leaves the other serving', async (t) => {
    const token = await tokenOf(b.base, survivor)
    a.child.kill('SIGKILL')
    await new Promise((resolve) => a.child.once('exit', resolve))
    const res = await fetch(`${b.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature('after-kill'))) })
    t.equal(res.status, 201)
    t.equal((await fetch(`${b.base}/ready`)).status, 200)
  })
}
