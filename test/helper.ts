// Test helpers: a database of its own per test file (a copy of the migrated template that
// `npm test` prepares, on the embedded or the server backend), the app built against it with a
// plain config, accounts and logins. And, for every test that imports it, each response of any
// app it builds, and of any service it starts, held against the OpenAPI document that app serves
// (openapi/response-check.cjs): a response outside it fails the test.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { type AddressInfo, createServer as createNetServer } from 'node:net'
import { createInterface } from 'node:readline'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Kysely } from 'kysely'
import pg from 'pg'
import tap, { type Test } from 'tap'
import { Value } from '@sinclair/typebox/value'
import { ErrorSchema, type ErrorBody } from '../src/errors.js'
import { buildApp, type App } from '../src/app.js'
import type { AppConfig } from '../src/config.js'
import { openDatabase } from '../src/db/open.js'
import type { Database, Role } from '../src/db/database.js'
import { insertAccount } from '../src/accounts/accounts.repository.js'
import { hashPassword } from '../src/accounts/passwords.js'
import { SERVICE_MARK, checkResponses, describeViolation } from './openapi/response-check.cjs'

type Tap = { teardown: (fn: () => unknown) => void }

// Subscribed before any app exists: every Fastify instance this test file creates, through
// build() or buildApp() itself. The failure is the file's, and names the operation, the status,
// the URL and the request id.
checkResponses({ report: (violation) => { tap.fail(describeViolation(violation)) } })
const SERVICE_CHECK = fileURLToPath(new URL('./openapi/service-check.cjs', import.meta.url))

/** Which backend this run tests: set by `npm test` (scripts/test.mjs). */
export const backend: 'server' | 'embedded' = process.env.TEST_BACKEND === 'server' ? 'server' : 'embedded'
const adminUrl = process.env.TEST_ADMIN_URL
const templateDb = process.env.TEST_TEMPLATE_DB
const templateDir = process.env.TEST_TEMPLATE_DIR

export function databaseUrl (name: string): string {
  if (adminUrl === undefined) throw new Error('TEST_ADMIN_URL is not set: run the tests with `npm test`')
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return u.toString()
}

export async function adminQuery (text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try { await client.query(text) } finally { await client.end() }
}

/** A new directory under the system's temporary one, removed on teardown. */
export async function tempDir (t: Tap, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A fresh database for this test: migrated (a copy of the template) unless `empty`, removed on
 * teardown. Returns a postgres:// URL (server backend) or a data directory (embedded backend).
 */
export async function createDatabase (t: Tap, { empty = false } = {}): Promise<string> {
  if (backend === 'embedded') {
    if (templateDir === undefined) throw new Error('TEST_TEMPLATE_DIR is not set: run the tests with `npm test`')
    const dir = await tempDir(t, 'sr-test-')
    if (!empty) await cp(templateDir, dir, { recursive: true, filter: (src) => !src.endsWith('.lock') })
    return dir
  }
  if (templateDb === undefined) throw new Error('TEST_TEMPLATE_DB is not set: run the tests with `npm test`')
  const name = `sr_test_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${empty ? 'template0' : templateDb}`)
  t.teardown(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return databaseUrl(name)
}

/** Whether this run tests the fast path (batching, compiled queries) or the plain one. */
export const fastPath = process.env.TEST_DB_FAST_PATH !== 'false'

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long!'

export function testConfig (overrides: Partial<AppConfig> = {}): AppConfig {
  return Object.freeze({
    HOST: '127.0.0.1',
    PORT: 0,
    LOG_LEVEL: 'silent',
    TRUST_PROXY: false,
    HTTP_HEADERS_TIMEOUT_MS: 10000,
    HTTP_REQUEST_TIMEOUT_MS: 60000,
    HTTP_KEEP_ALIVE_TIMEOUT_MS: 5000,
    HTTP_CONNECTIONS_CHECK_MS: 1000,
    DATA_DIR: './unused',
    ADMIN_ORG: 'default',
    DB_POOL_MAX: 5,
    // `npm test` runs the sources tests a second time without batching (scripts/test.mjs).
    DB_FAST_PATH: fastPath,
    DB_READS_IN_FLIGHT: 2,
    DB_WRITES_IN_FLIGHT: 2,
    DB_CONNECT_TIMEOUT_MS: 1000,
    DB_STATEMENT_TIMEOUT_MS: 10000,
    DB_POOL_MODE: 'session',
    REPLICA_MAX_LAG_MS: 5000,
    REPLICA_MAX_WAIT_MS: 100,
    REPLICA_CHECK_MS: 1000,
    REDIS_TIMEOUT_MS: 500,
    JWT_SECRET: TEST_SECRET,
    JWT_ISSUER: 'source-registry',
    JWT_AUDIENCE: 'source-registry',
    TOKEN_TTL_SECONDS: 3600,
    ACCOUNT_CACHE_TTL_SECONDS: 0,
    API_KEY_MAX_PER_ACCOUNT: 50,
    API_KEY_LAST_USED_INTERVAL_SECONDS: 60,
    CONFLICT_POLICY: 'record',
    CONFLICT_TOLERANCE_M: 9,
    MAX_FEATURES: 1000,
    ITEMS_ROWS_PER_QUERY: 500,
    ITEMS_COUNT_MAX: 100000,
    CRS_EPSG: '3857,3035,28992,25832,25833,27700,2154',
    TILES_MAX_FEATURES: 10000,
    TILES_MAX_BYTES: 512000,
    TILES_MAX_AGE_SECONDS: 10,
    TILES_CONCURRENCY: 4,
    TILES_QUEUE: 256,
    TILES_CACHE_BYTES: 16777216,
    MAP_TILE_URL: 'none',
    MAP_TILE_ATTRIBUTION: '',
    BODY_LIMIT_BYTES: 10 * 1024 * 1024,
    LARGE_BODY_BYTES: 65536,
    LARGE_BODY_CONCURRENCY: 4,
    LARGE_BODY_QUEUE: 64,
    RATE_LIMIT_MAX: 100000,
    RATE_LIMIT_WINDOW_SECONDS: 60,
    LOGIN_MAX_FAILURES: 1000,
    LOGIN_ADDRESS_MAX_FAILURES: 1000,
    LOGIN_EMAIL_SLOWDOWN_AFTER: 1000,
    LOGIN_EMAIL_MAX_DELAY_MS: 10000,
    LOGIN_FAILURE_WINDOW_SECONDS: 900,
    EVENTS_POLL_MS: 100,
    EVENTS_HEARTBEAT_MS: 15000,
    EVENTS_RETENTION: '30d',
    EVENTS_RETENTION_BATCH: 1000,
    EVENTS_RETENTION_CHECK_MS: 60000,
    WEBHOOK_ALLOW_PRIVATE: false,
    WEBHOOK_RETRY_FOR: 86400,
    WEBHOOK_RETRY_BASE_MS: 50,
    WEBHOOK_TIMEOUT_MS: 2000,
    WEBHOOK_CONCURRENCY: 4,
    WEBHOOK_LEASE_MS: 5000,
    WEBHOOK_MAX_PER_ORG: 20,
    WATCH_MAX_AREA_KM2: 10000,
    ...overrides
  })
}

export interface TestApp { app: App, db: Kysely<Database>, url: string }

/** The database settings of a target made by createDatabase: a server URL or a data directory. */
export const targetConfig = (target: string) => testConfig(backend === 'embedded' ? { DATA_DIR: target } : { DATABASE_URL: target })

/** Opens a database made by createDatabase (db/open.ts, as the service does), closed on teardown. */
export async function directDb (t: Tap, target: string): Promise<Kysely<Database>> {
  const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
  t.teardown(() => db.destroy())
  return db
}

/** The app on a fresh migrated database (or `url`), closed on teardown. */
export async function build (t: Tap, overrides: Partial<AppConfig> = {}, { url }: { url?: string } = {}): Promise<TestApp> {
  const target = url ?? await createDatabase(t)
  const config = testConfig({ ...targetConfig(target), ...overrides })
  const { db } = await openDatabase(config)
  const app = await buildApp({ config, db })
  await app.ready()
  t.teardown(() => app.close())
  return { app, db: app.db, url: target }
}

/**
 * Another instance of the app on the database of `first`, with its own caches: on the server
 * backend with a pool of its own; embedded (a data directory serves one process) on the same
 * database handle, which this instance leaves open when it closes.
 */
export async function secondInstance (t: Tap, first: TestApp, overrides: Partial<AppConfig> = {}): Promise<TestApp> {
  if (backend === 'server') return await build(t, overrides, { url: first.url })
  const db = first.db
  const shared = new Proxy(db, {
    get: (target, key) => {
      if (key === 'destroy') return async () => {}
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  const app = await buildApp({ config: testConfig({ ...targetConfig(first.url), ...overrides }), db: shared })
  await app.ready()
  t.teardown(() => app.close())
  return { app, db: shared, url: first.url }
}

export const PASSWORD = 'correct horse battery staple'

let counter = 0
export async function addAccount (db: Kysely<Database>, { role = 'editor', organisation = 'org-a', email, password = PASSWORD }: { role?: Role, organisation?: string, email?: string, password?: string } = {}) {
  const account = await insertAccount(db, {
    email: email ?? `${role}-${++counter}-${randomBytes(3).toString('hex')}@example.org`,
    role,
    organisation,
    passwordHash: await hashPassword(password)
  })
  return { ...account, password }
}

/** Every Feature of a listing, in order, following its next links from `url` (at most `maxPages`); a page that is not 200 throws. */
export async function followPages (app: App, url: string, headers: Record<string, string>, maxPages = 100): Promise<Array<{ id: string, geometry: unknown, properties: Record<string, unknown> }>> {
  const features: Array<{ id: string, geometry: unknown, properties: Record<string, unknown> }> = []
  let next: string | undefined = url
  for (let pages = 0; next !== undefined && pages < maxPages; pages++) {
    const res = await app.inject({ method: 'GET', url: next.replace(/^http:\/\/[^/]+/, ''), headers })
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
    const page = res.json() as { features: typeof features, links: Array<{ rel: string, href: string }> }
    features.push(...page.features)
    next = page.links.find((l) => l.rel === 'next')?.href
  }
  return features
}

export async function login (app: App, email: string, password = PASSWORD): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/token', payload: { email, password } })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
  return (res.json() as { token: string }).token
}

/** An account of the given role and organisation, and a bearer header for it. */
export async function session (t: TestApp, role: Role = 'editor', organisation = 'org-a') {
  const account = await addAccount(t.db, { role, organisation })
  const token = await login(t.app, account.email)
  return { account, token, headers: { authorization: `Bearer ${token}` } }
}

// A 1°×1° square with its lower-left corner at (x, y), counter-clockwise, closed.
export function square (x = 10, y = 50, size = 1): number[][][] {
  return [[[x, y], [x + size, y], [x + size, y + size], [x, y + size], [x, y]]]
}

export function feature (id: string, { coordinates = square(), start = '2024-01-01T00:00:00Z', end = '2024-12-31T00:00:00Z' }: { coordinates?: unknown, start?: unknown, end?: unknown } = {}) {
  return { type: 'Feature', id, properties: { start_at: start, end_at: end }, geometry: { type: 'Polygon', coordinates } }
}

export function collection (...features: unknown[]) {
  return { type: 'FeatureCollection', features }
}

/** Asserts an error response: its status, its code, and a body true to the Error schema. */
export function expectError (t: Test, res: { statusCode: number, body: string, json: () => unknown }, status: number, code: string): ErrorBody {
  t.equal(res.statusCode, status, `status ${status}: ${res.body}`)
  const body = res.json() as ErrorBody
  t.ok(Value.Check(ErrorSchema, body), 'error body matches its schema')
  t.equal(body.status, status)
  t.equal(body.code, code)
  t.type(body.message, 'string')
  return body
}

export interface RunningService {
  base: string
  child: ChildProcess
  /** Every line the process wrote, stdout and stderr, as it came. */
  lines: string[]
  /** Resolves once a line matching `pattern` has been written (at index `from` of `lines` or later: an event after a point in the test, not an earlier one alike). */
  waitFor: (pattern: RegExp, ms?: number, from?: number) => Promise<string>
}

/** A loopback port free right now (for a server a test starts). */
export function freePort (): Promise<number> {
  return new Promise((resolve) => {
    const probe = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/**
 * The service as ops start it, `node dist/main.cjs`, in a process of its own on a free port, on
 * a database made by createDatabase (`target`), killed on teardown. For what only a real socket
 * to a separate process shows: resets, timeouts, logs, signals. Its responses are held against
 * its OpenAPI document (a --require preload that writes a line per violation): `t` fails on each.
 */
export async function startService (t: Tap & { fail: (message: string) => unknown }, target: string, env: Record<string, string> = {}): Promise<RunningService> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--require', SERVICE_CHECK, 'dist/main.cjs'], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      JWT_SECRET: TEST_SECRET,
      ...(backend === 'server' ? { DATABASE_URL: target } : { DATA_DIR: target }),
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const lines: string[] = []
  const waiters: Array<{ pattern: RegExp, resolve: (line: string) => void }> = []
  const onLine = (line: string): void => {
    if (line.startsWith(SERVICE_MARK)) t.fail(describeViolation(JSON.parse(line.slice(SERVICE_MARK.length))))
    lines.push(line)
    for (const w of [...waiters]) {
      if (w.pattern.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line) }
    }
  }
  for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on('line', onLine)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  const waitFor = (pattern: RegExp, ms = 60_000, from = 0): Promise<string> => {
    const seen = lines.slice(from).find((l) => pattern.test(l))
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${ms} ms; output:\n${lines.join('\n')}`)), ms)
      waiters.push({ pattern, resolve: (line) => { clearTimeout(timer); resolve(line) } })
    })
  }
  await waitFor(/Server listening at/)
  return { base: `http://127.0.0.1:${port}`, child, lines, waitFor }
}
