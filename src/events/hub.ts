// Tells this instance's SSE streams and deliverer when new events can be read. It watches the
// feed's head (the last event below the horizon), which changes exactly when events become
// servable, and emits 'change' when it does. It looks when PostgreSQL notifies the channel the
// event triggers notify (LISTEN on EVENTS_LISTEN_URL, a direct connection: a transaction-pooling
// PgBouncer does not pass LISTEN), else every EVENTS_POLL_MS; while events of transactions still
// open exist, it looks again soon, for their commit may notify nothing the horizon waits for.
// Looks are at least COALESCE_MS apart: under a thousand commits a second each notifies, and one
// look (and one webhook lease) per commit would cost the writes more than the events themselves.
import { EventEmitter } from 'node:events'
import type { FastifyBaseLogger } from 'fastify'
import type pg from 'pg'
import { connectClient } from '../db/connect.js'
import type { EventStore } from './events.store.js'

const CHANNEL = 'source_registry_events'
const PENDING_RECHECK_MS = 50
const COALESCE_MS = 20

export class EventHub extends EventEmitter {
  private last: string | undefined
  private timer: NodeJS.Timeout | undefined
  private listener: pg.Client | undefined
  private closed = false
  private checking: Promise<void> | undefined
  private again = false
  private lastCheck = 0
  private soon: NodeJS.Timeout | undefined

  constructor (private readonly store: EventStore, private readonly opts: { pollMs: number, listenUrl: string | undefined, log: FastifyBaseLogger }) {
    super()
    this.setMaxListeners(0)
  }

  start (): void {
    if (this.opts.listenUrl !== undefined) void this.listen()
    this.schedule(0)
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.soon !== undefined) clearTimeout(this.soon)
    await this.checking
    await this.listener?.end().catch(() => {})
  }

  /** Look now (a notification, or this instance's own write). */
  poke (): void {
    if (this.closed) return
    if (this.checking !== undefined) { this.again = true; return }
    const wait = this.lastCheck + COALESCE_MS - Date.now()
    if (wait > 0) {
      this.soon ??= setTimeout(() => { this.soon = undefined; this.poke() }, wait)
      return
    }
    this.lastCheck = Date.now()
    this.checking = this.check().finally(() => {
      this.checking = undefined
      if (this.again) { this.again = false; this.poke() }
    })
  }

  private schedule (ms: number): void {
    if (this.closed) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => this.poke(), ms)
    this.timer.unref()
  }

  private async check (): Promise<void> {
    let pending = false
    try {
      const head = await this.store.head()
      pending = head.pending
      if (head.last !== this.last) {
        this.last = head.last
        this.emit('change')
      }
    } catch (err) {
      if (!this.closed) this.opts.log.warn({ err }, 'events: reading the feed head failed')
    }
    const idle = this.listener !== undefined ? this.opts.pollMs * 10 : this.opts.pollMs
    this.schedule(pending ? Math.min(PENDING_RECHECK_MS, idle) : idle)
  }

  private async listen (delayMs = 1000): Promise<void> {
    if (this.closed) return
    const retry = () => { setTimeout(() => { void this.listen(Math.min(delayMs * 2, 30_000)) }, delayMs).unref() }
    let client: pg.Client
    try {
      client = await connectClient(this.opts.listenUrl ?? '')
    } catch (err) {
      this.opts.log.warn({ err }, 'events: LISTEN failed; polling until it works')
      retry()
      return
    }
    client.on('end', () => {
      if (this.listener !== client) return
      this.listener = undefined
      if (!this.closed) {
        this.opts.log.warn('events: the LISTEN connection closed; polling until it is back')
        retry()
      }
    })
    client.on('notification', () => this.poke())
    try {
      await client.query(`LISTEN ${CHANNEL}`)
      if (this.closed) { await client.end(); return }
      this.listener = client
      this.poke()
    } catch (err) {
      this.opts.log.warn({ err }, 'events: LISTEN failed; polling until it works')
      await client.end().catch(() => {})
      retry()
    }
  }
}
