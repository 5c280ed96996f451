// The event retention, in the background: every EVENTS_RETENTION_CHECK_MS each instance removes
// expired events in batches of EVENTS_RETENTION_BATCH, each batch its own short transaction
// (events_remove_expired, sql/functions/events_retention.sql), one after another until a batch
// removes less than a full one. Writes never wait for the whole removal: a batch holds no lock an
// INSERT needs, and between batches the pool's connection is given back. Instances take turns
// through an advisory lock: one that finds it held skips its turn.
import type { FastifyBaseLogger } from 'fastify'
import type { EventStore } from './events.store.js'

export interface RetentionOptions {
  retentionMs: number
  batch: number
  checkMs: number
  /** VACUUM events after a round that removed some: the embedded backend (PGlite) runs no autovacuum. */
  vacuum: boolean
  log: FastifyBaseLogger
}

export class EventRetention {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<number> | undefined
  private closed = false

  constructor (private readonly store: EventStore, private readonly opts: RetentionOptions) {}

  start (): void {
    this.schedule()
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    await this.running?.catch(() => {})
  }

  /** Removes every expired event, batch by batch; how many it removed (0 when another instance was removing). */
  run (): Promise<number> {
    this.running ??= this.removeAll().finally(() => { this.running = undefined })
    return this.running
  }

  private schedule (): void {
    if (this.closed) return
    this.timer = setTimeout(() => {
      this.run().catch((err: unknown) => {
        if (!this.closed) this.opts.log.warn({ err }, 'events retention: removing expired events failed; trying again later')
      }).finally(() => this.schedule())
    }, this.opts.checkMs)
    this.timer.unref()
  }

  private async removeAll (): Promise<number> {
    let total = 0
    while (!this.closed) {
      const removed = await this.store.removeExpired(this.opts.retentionMs, this.opts.batch)
      if (removed === undefined) break
      total += removed
      if (removed < this.opts.batch) break
      // Let the requests that queued for a connection meanwhile go first.
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (total > 0) {
      this.opts.log.info({ removed: total }, 'events retention: expired events removed')
      if (this.opts.vacuum && !this.closed) await this.store.vacuum()
    }
    return total
  }
}
