// Read replicas (DATABASE_REPLICA_URLS): which replica a read may go to, and read-your-writes.
//
// Each replica is checked every REPLICA_CHECK_MS: its replay position (pg_last_wal_replay_lsn)
// against the primary's WAL insert positions sampled at each check (pg_current_wal_insert_lsn: a
// commit's record is there as soon as it returns, even with synchronous_commit off). Its lag is how long ago the primary
// had first written WAL the replica has not replayed yet (0 when it has replayed everything
// sampled), so an idle primary does not make a caught-up replica look late. A replica that does not
// answer, is not in recovery, or lags more than REPLICA_MAX_LAG_MS is skipped until a check finds
// it well again; a read that fails on it as unavailable marks it down at once and is retried on
// the primary.
//
// Read your writes: after a write commits, the primary's WAL insert position
// (pg_current_wal_insert_lsn(), taken after the commit, so past its commit record) is the write's LSN. It is answered in
// the X-Min-LSN header and remembered for the account in this instance. A read whose request
// carries an X-Min-LSN (echoed by the client, to whichever instance) or whose account wrote here
// goes to a replica that has replayed that far, waiting up to REPLICA_MAX_WAIT_MS for one, and
// otherwise to the primary. Instances share no memory: across instances the header is what
// carries a client's writes (docs/operations.md).
import { AsyncLocalStorage } from 'node:async_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Kysely, sql } from 'kysely'
import { LRUCache } from 'lru-cache'
import { Gauge, Counter, Histogram } from 'prom-client'
import type { Database } from '../db/database.js'
import type { Metrics } from './metrics.js'

/** A WAL position ("16/B374D848") as a number. */
export function parseLsn (text: string | undefined | null): bigint | undefined {
  const m = typeof text === 'string' ? /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text.trim()) : null
  return m === null ? undefined : (BigInt(`0x${m[1] as string}`) << 32n) | BigInt(`0x${m[2] as string}`)
}

export function formatLsn (lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`
}

const maxLsn = (a: bigint | undefined, b: bigint | undefined): bigint | undefined =>
  a === undefined ? b : b === undefined ? a : (a > b ? a : b)

export type ReplicaStateName = 'healthy' | 'lagging' | 'down'

export interface ReplicaState { name: string, state: ReplicaStateName, lag_ms: number | null }

/** One replica: its database, and what the last check and reads found. */
export class Replica {
  state: ReplicaStateName = 'down'
  lagMs: number | null = null
  replayLsn: bigint | undefined
  reason = 'not checked yet'
  private polling: Promise<bigint | undefined> | undefined

  constructor (readonly name: string, readonly db: Kysely<Database>) {}

  /** Its replay position now; concurrent callers share one query. */
  replay (): Promise<bigint | undefined> {
    this.polling ??= sql<{ lsn: string | null }>`SELECT pg_last_wal_replay_lsn()::text AS lsn`.execute(this.db)
      .then(({ rows }) => {
        this.replayLsn = maxLsn(this.replayLsn, parseLsn(rows[0]?.lsn))
        return this.replayLsn
      })
      .finally(() => { this.polling = undefined })
    return this.polling
  }
}

/** What a request carries for routing: its X-Min-LSN, its account, and the LSN of a write it made. */
export interface ReadContext {
  minLsn: bigint | undefined
  accountId: () => string | undefined
  written: bigint | undefined
}

export const readContext = new AsyncLocalStorage<ReadContext>()

export interface ReplicaOptions {
  maxLagMs: number
  maxWaitMs: number
  checkMs: number
  log: { warn: (obj: object, msg: string) => void, info: (obj: object, msg: string) => void }
  metrics: Metrics
}

const POLL_MS = 2

/** The LSN of a write whose position could not be read after its commit: only the primary has it for sure. */
export const UNKNOWN_LSN = 0xFFFFFFFFFFFFFFFFn

export class Replicas {
  private next = 0
  private timer: NodeJS.Timeout | undefined
  private checking: Promise<void> | undefined
  /** The primary's WAL position at each recent check, oldest first. */
  private samples: Array<{ at: number, lsn: bigint }> = []
  private readonly lastWrite = new LRUCache<string, bigint>({ max: 100_000, ttl: 10 * 60_000 })
  private nextLsn: Promise<bigint> | undefined
  readonly reads: Counter<'pool'>
  readonly waits: Histogram<'served_by'>

  constructor (private readonly primary: Kysely<Database>, readonly list: Replica[], private readonly opts: ReplicaOptions) {
    const registers = [opts.metrics.registry]
    const states = (): Replica[] => this.list
    new Gauge({
      name: 'source_registry_replica_lag_seconds',
      help: 'How far each replica\'s replay is behind the primary, as of its last check (absent while it does not answer).',
      labelNames: ['replica'],
      registers,
      collect () {
        this.reset()
        for (const r of states()) if (r.lagMs !== null) this.set({ replica: r.name }, r.lagMs / 1000)
      }
    })
    new Gauge({
      name: 'source_registry_replica_up',
      help: 'Whether reads go to this replica (1), or it is skipped as down or lagging (0).',
      labelNames: ['replica'],
      registers,
      collect () {
        this.reset()
        for (const r of states()) this.set({ replica: r.name }, r.state === 'healthy' ? 1 : 0)
      }
    })
    this.reads = new Counter({ name: 'source_registry_db_reads_total', help: 'Reads that may go to a replica, by the pool that served them.', labelNames: ['pool'], registers })
    this.waits = new Histogram({
      name: 'source_registry_read_your_writes_wait_seconds',
      help: 'How long a read that had to see a write waited for a replica, by what served it in the end (replica, primary).',
      labelNames: ['served_by'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers
    })
  }

  start (): void {
    void this.check()
    this.timer = setInterval(() => { void this.check() }, this.opts.checkMs)
    this.timer.unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.checking
    await Promise.all(this.list.map(async (r) => { await r.db.destroy() }))
  }

  states (): ReplicaState[] {
    return this.list.map((r) => ({ name: r.name, state: r.state, lag_ms: r.lagMs }))
  }

  /** Checks every replica once (a check already running is awaited instead). */
  check (): Promise<void> {
    this.checking ??= this.checkAll().finally(() => { this.checking = undefined })
    return this.checking
  }

  private async checkAll (): Promise<void> {
    try {
      const { rows } = await sql<{ lsn: string }>`SELECT pg_current_wal_insert_lsn()::text AS lsn`.execute(this.primary)
      const lsn = parseLsn(rows[0]?.lsn)
      if (lsn !== undefined) this.samples.push({ at: performance.now(), lsn })
      // Enough history to tell a lag past REPLICA_MAX_LAG_MS, and no more.
      const keepFrom = performance.now() - this.opts.maxLagMs - 2 * this.opts.checkMs
      while (this.samples.length > 1 && (this.samples[0] as { at: number }).at < keepFrom) this.samples.shift()
    } catch {
      // The primary does not answer: the replicas are judged on whether they answer alone.
    }
    await Promise.all(this.list.map((r) => this.checkOne(r)))
  }

  private async checkOne (r: Replica): Promise<void> {
    const before = r.state
    try {
      const { rows } = await sql<{ recovery: boolean, lsn: string | null }>`SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn()::text AS lsn`.execute(r.db)
      const replay = parseLsn(rows[0]?.lsn)
      if (rows[0]?.recovery !== true || replay === undefined) {
        r.state = 'down'
        r.lagMs = null
        r.reason = 'not a replica (not in recovery)'
      } else {
        r.replayLsn = maxLsn(r.replayLsn, replay)
        const behind = this.samples.find((s) => s.lsn > (r.replayLsn as bigint))
        r.lagMs = behind === undefined ? 0 : Math.round(performance.now() - behind.at)
        r.state = r.lagMs > this.opts.maxLagMs ? 'lagging' : 'healthy'
        r.reason = r.state === 'lagging' ? `lags ${r.lagMs} ms (REPLICA_MAX_LAG_MS ${this.opts.maxLagMs})` : ''
      }
    } catch (err) {
      r.state = 'down'
      r.lagMs = null
      r.reason = (err as Error).message
    }
    this.logChange(r, before)
  }

  private logChange (r: Replica, before: ReplicaStateName): void {
    if (r.state === before) return
    if (r.state === 'healthy') this.opts.log.info({ replica: r.name, lagMs: r.lagMs }, 'replica healthy: reads go to it')
    else this.opts.log.warn({ replica: r.name, state: r.state, reason: r.reason }, 'replica skipped: reads go elsewhere until it recovers')
  }

  /** A read on `r` found it unavailable: skip it until a check finds it well. */
  markDown (r: Replica, err: unknown): void {
    const before = r.state
    r.state = 'down'
    r.lagMs = null
    r.reason = (err as Error).message
    this.logChange(r, before)
  }

  /** The least WAL position a read of this request must see, if any. */
  minLsnOf (ctx: ReadContext | undefined): bigint | undefined {
    if (ctx === undefined) return undefined
    const account = ctx.accountId()
    return maxLsn(ctx.minLsn, account === undefined ? undefined : this.lastWrite.get(account))
  }

  /**
   * A healthy replica that has replayed `minLsn` (waiting up to REPLICA_MAX_WAIT_MS for one), or
   * undefined: read the primary.
   */
  async pick (minLsn: bigint | undefined): Promise<Replica | undefined> {
    const healthy = this.list.filter((r) => r.state === 'healthy')
    if (healthy.length === 0) return undefined
    const first = this.next++ % healthy.length
    const ordered = [...healthy.slice(first), ...healthy.slice(0, first)]
    if (minLsn === undefined) return ordered[0]
    if (minLsn === UNKNOWN_LSN) return undefined
    const ready = ordered.find((r) => r.replayLsn !== undefined && r.replayLsn >= minLsn)
    if (ready !== undefined) return ready
    if (this.opts.maxWaitMs === 0) return undefined
    const r = ordered[0] as Replica
    const started = performance.now()
    const deadline = started + this.opts.maxWaitMs
    try {
      for (;;) {
        const replayed = await r.replay()
        if (replayed !== undefined && replayed >= minLsn) {
          this.waits.observe({ served_by: 'replica' }, (performance.now() - started) / 1000)
          return r
        }
        if (performance.now() + POLL_MS > deadline) break
        await sleep(POLL_MS)
      }
    } catch (err) {
      this.markDown(r, err)
    }
    this.waits.observe({ served_by: 'primary' }, (performance.now() - started) / 1000)
    return undefined
  }

  /**
   * The primary's WAL position now: called after a commit, so at or past it. Writes that call
   * this together share one query, made after all of them asked. When it cannot be read (the
   * write has committed: it is not failed for that), UNKNOWN_LSN sends the reads to the primary.
   */
  lsnAfterWrite (): Promise<bigint> {
    this.nextLsn ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      this.nextLsn = undefined
      try {
        // The insert position, not pg_current_wal_lsn() (what is written out): with
        // synchronous_commit off a commit returns while its record may still be in WAL buffers.
        const { rows } = await sql<{ lsn: string }>`SELECT pg_current_wal_insert_lsn()::text AS lsn`.execute(this.primary)
        return parseLsn(rows[0]?.lsn) ?? UNKNOWN_LSN
      } catch (err) {
        this.opts.log.warn({ err }, 'could not read the WAL position after a write: its account reads the primary')
        return UNKNOWN_LSN
      }
    })
    return this.nextLsn
  }

  /** Records a committed write of this request (its response's X-Min-LSN) and of its account. */
  wrote (ctx: ReadContext | undefined, lsn: bigint): void {
    if (ctx === undefined) return
    ctx.written = maxLsn(ctx.written, lsn)
    const account = ctx.accountId()
    if (account !== undefined) this.lastWrite.set(account, maxLsn(this.lastWrite.get(account), lsn) as bigint)
  }
}
