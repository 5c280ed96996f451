// A pool over several hosts (libpq's multi-host strings, db/hosts.ts), which follows the primary
// as libpq's target_session_attrs does: it asks every host at once which role it has (one query:
// pg_is_in_recovery() and transaction_read_only) and takes the first, in the string's order, that
// fits; one pg.Pool serves that host. A connection error, or a write refused as read-only
// (SQLSTATE 25006: the host was demoted), makes it ask again; when another host fits, a new pool
// serves it and the old one closes as its connections come back. Each new connection checks its
// host's role again, so a pool never hands out a connection to a host that no longer fits.
// A request that finds no fitting host keeps asking until DB_CONNECT_TIMEOUT_MS, then fails as
// "database unavailable" (503 with Retry-After).
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { HostTarget, TargetSessionAttrs } from '../connection-string.js'

interface Role { recovery: boolean, readOnly: boolean }

const ROLE_SQL = "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') = 'on' AS read_only"

function fits (attrs: TargetSessionAttrs, role: Role, pass: 1 | 2): boolean {
  switch (attrs) {
    case 'any': return true
    case 'read-write': return !role.readOnly
    case 'read-only': return role.readOnly
    case 'primary': return !role.recovery
    case 'standby': return role.recovery
    // libpq: a standby if there is one, any host otherwise.
    case 'prefer-standby': return pass === 2 || role.recovery
  }
}

/** Whether the host `client` is connected to fits `attrs` (prefer-standby: any host does). */
export async function fitsTarget (client: pg.Client, attrs: TargetSessionAttrs): Promise<boolean> {
  if (attrs === 'any' || attrs === 'prefer-standby') return true
  const { rows } = await client.query<{ recovery: boolean, read_only: boolean }>(ROLE_SQL)
  return fits(attrs, { recovery: rows[0]?.recovery === true, readOnly: rows[0]?.read_only === true }, 1)
}

/** The error a request gets when no host fits: SQLSTATE class 08, so it is "database unavailable". */
export class NoHostError extends Error {
  readonly code = '08001'
  constructor (message: string) { super(message) }
}

const RESOLVE_AGAIN_MS = 200

// Errors that mean "this host is not the one any more": connection lost, shutting down, read-only.
const MOVED_SQLSTATES = new Set(['25006', '57P01', '57P02', '57P03'])
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE', 'ENOTFOUND'])
export function hostMoved (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && (MOVED_SQLSTATES.has(code) || CONNECTION_ERRNOS.has(code) || code.startsWith('08'))) return true
  return err instanceof Error && /Connection terminated|connection error|Client was closed/i.test(err.message)
}

export interface FailoverEvents {
  /** The host now served, and the one before (undefined at the first). */
  onPrimary?: (host: string, previous: string | undefined) => void
  onProbeFailed?: (message: string) => void
}

export interface FailoverPoolOptions extends FailoverEvents {
  hosts: HostTarget[]
  targetSessionAttrs: TargetSessionAttrs
  connectTimeoutMs: number
  /** A pg.Pool for one single-host URL, with the check to run on each new connection (pg-pool's onConnect), if any. */
  makePool: (url: string, onConnect: ((client: pg.ClientBase) => Promise<void>) | undefined) => pg.Pool
}

interface Serving { host: HostTarget, pool: pg.Pool }

export class FailoverPool {
  private serving: Serving | undefined
  /** The host served was found gone or demoted: ask again before the next connection. */
  private stale = false
  private resolving: Promise<Serving> | undefined
  private lastFailedAt = 0
  /** How many times the served host changed. */
  failovers = 0
  private ended = false

  constructor (private readonly opts: FailoverPoolOptions) {}

  /** The host served now (host:port), if one was found. */
  get host (): string | undefined { return this.serving?.host.name }

  get totalCount (): number { return this.serving?.pool.totalCount ?? 0 }
  get idleCount (): number { return this.serving?.pool.idleCount ?? 0 }
  get waitingCount (): number { return this.serving?.pool.waitingCount ?? 0 }

  async connect (): Promise<pg.PoolClient> {
    const deadline = performance.now() + this.opts.connectTimeoutMs
    for (;;) {
      let serving: Serving
      try {
        serving = this.serving !== undefined && !this.stale ? this.serving : await this.resolve()
      } catch (err) {
        if (this.ended || performance.now() + RESOLVE_AGAIN_MS > deadline) throw err
        await sleep(RESOLVE_AGAIN_MS)
        continue
      }
      try {
        const client = await serving.pool.connect()
        return this.watched(client)
      } catch (err) {
        if (!hostMoved(err) && !(err instanceof NoHostError)) throw err
        this.moved(serving)
        if (this.ended || performance.now() + RESOLVE_AGAIN_MS > deadline) throw err
      }
    }
  }

  async end (): Promise<void> {
    this.ended = true
    const s = this.serving
    this.serving = undefined
    await s?.pool.end()
  }

  /** A query on `serving` found its host gone or demoted: find the host again. */
  private moved (serving: Serving): void {
    if (this.serving === serving) this.stale = true
  }

  /** Checks its queries: a query that finds the host gone or read-only sends the pool to look again, and the connection is dropped. */
  private watched (client: pg.PoolClient): pg.PoolClient {
    const serving = this.serving
    const release = client.release.bind(client)
    let broken = false
    const query = client.query
    // pg's query() has many overloads; only promise results are watched (a Cursor passes through).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const watch: any = (...args: any[]) => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const result = (query as any).apply(client, args)
      if (result instanceof Promise) {
        return result.catch((err: unknown) => {
          if (hostMoved(err)) {
            broken = true
            if (serving !== undefined) this.moved(serving)
          }
          throw err
        })
      }
      return result
    }
    client.query = watch
    client.release = (err?: Error | boolean) => {
      client.query = query
      release(err ?? (broken ? true : undefined))
    }
    return client
  }

  /** Asks every host its role (one shared attempt for concurrent callers). */
  private resolve (): Promise<Serving> {
    this.resolving ??= (async () => {
      const wait = this.lastFailedAt + RESOLVE_AGAIN_MS - performance.now()
      if (wait > 0) await sleep(wait)
      try {
        return await this.find()
      } catch (err) {
        this.lastFailedAt = performance.now()
        throw err
      }
    })().finally(() => { this.resolving = undefined })
    return this.resolving
  }

  private async find (): Promise<Serving> {
    if (this.ended) throw new NoHostError('the database pool is closed')
    const { hosts, targetSessionAttrs } = this.opts
    const roles = await Promise.all(hosts.map(async (h) => {
      try {
        return await this.probe(h)
      } catch (err) {
        return err as Error
      }
    }))
    let found: HostTarget | undefined
    for (const pass of [1, 2] as const) {
      found = hosts.find((_, i) => { const r = roles[i]; return !(r instanceof Error) && r !== undefined && fits(targetSessionAttrs, r, pass) })
      if (found !== undefined) break
    }
    if (found === undefined) {
      const tried = hosts.map((h, i) => {
        const r = roles[i]
        return `${h.name} (${r instanceof Error ? r.message : r?.recovery === true ? 'standby' : r?.readOnly === true ? 'read-only primary' : 'read-write primary'})`
      }).join(', ')
      const message = `no host fits target_session_attrs=${targetSessionAttrs}: ${tried}`
      this.opts.onProbeFailed?.(message)
      throw new NoHostError(message)
    }
    const previous = this.serving
    this.stale = false
    if (previous?.host.url === found.url) return previous
    const serving: Serving = { host: found, pool: this.opts.makePool(found.url, this.checkRole(found)) }
    this.serving = serving
    if (previous !== undefined) void previous.pool.end().catch(() => {})
    const before = this.lastHost
    if (before !== undefined && before !== found.name) this.failovers++
    this.lastHost = found.name
    this.opts.onPrimary?.(found.name, before)
    return serving
  }

  private lastHost: string | undefined

  private async probe (h: HostTarget): Promise<Role> {
    const client = new pg.Client({ connectionString: h.url, connectionTimeoutMillis: this.opts.connectTimeoutMs, application_name: 'source-registry-probe' })
    client.on('error', () => {})
    try {
      await client.connect()
      const { rows } = await client.query<{ recovery: boolean, read_only: boolean }>(ROLE_SQL)
      return { recovery: rows[0]?.recovery === true, readOnly: rows[0]?.read_only === true }
    } finally {
      await client.end().catch(() => {})
    }
  }

  /**
   * The pool's onConnect hook (pg-pool runs it on each new connection, with the pool's own error
   * listener already on the client): the host must still fit, or the connection is ended and the
   * caller gets NoHostError. Not a Client subclass that checks inside connect(): until connect's
   * callback ran such a client had no 'error' listener, and a connection terminated right after
   * its startup (ReadyForQuery, then FATAL 57P01 in the same packet read) emitted an 'error' no one
   * heard, an uncaught exception that ended the service (the fault suite's terminate storm).
   */
  private checkRole (host: HostTarget): ((client: pg.ClientBase) => Promise<void>) | undefined {
    const attrs = this.opts.targetSessionAttrs
    if (attrs === 'any' || attrs === 'prefer-standby') return undefined
    return async (client) => {
      const { rows } = await client.query<{ recovery: boolean, read_only: boolean }>(ROLE_SQL)
      const role = { recovery: rows[0]?.recovery === true, readOnly: rows[0]?.read_only === true }
      if (!fits(attrs, role, 1)) throw new NoHostError(`${host.name} no longer fits target_session_attrs=${attrs}`)
    }
  }
}
