// Webhook delivery, off the request path. Each instance leases due subscriptions (FOR UPDATE SKIP
// LOCKED in events.repository.ts), WEBHOOK_CONCURRENCY at a time, and POSTs each one's next
// events in feed order, one at a time, signed per Standard Webhooks. The position moves on only
// past 2xx answers, so delivery is at least once and in order per subscription; a killed
// instance's lease runs out (WEBHOOK_LEASE_MS) and another instance sends from the last recorded
// position (the duplicates a receiver sees are bounded by one batch).
//
// A failure (non-2xx, no answer within WEBHOOK_TIMEOUT_MS, a refused address) stops the batch and
// schedules the next attempt after base · 2^(failures−1), at most an hour, with full jitter in its
// upper half. After WEBHOOK_RETRY_FOR seconds of failures the subscription is marked failing and
// still retried, at the longest interval; its events stay in the feed until the retention
// (EVENTS_RETENTION) removes them, which it does not while a subscription is active.
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { type Position, comparePositions } from './cursor.js'
import type { Attempt, EventRow, Lease } from './events.repository.js'
import type { EventStore } from './events.store.js'
import { cloudEvent } from './cloud-event.js'
import type { EventHub } from './hub.js'
import { checkedLookup, refusedAddress } from './webhook-address.js'

const BATCH = 100
const MAX_BACKOFF_MS = 3_600_000
const IDLE_MS = 1000
const PRUNE_EVERY_MS = 3_600_000

export interface DelivererOptions {
  concurrency: number
  timeoutMs: number
  leaseMs: number
  retryBaseMs: number
  retryForSeconds: number
  allowPrivate: boolean
  log: FastifyBaseLogger
}

export function backoffMs (failures: number, baseMs: number, random = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.min(failures - 1, 40))
  return Math.round(ceiling / 2 + random() * ceiling / 2)
}

export class Deliverer {
  private running = 0
  private closed = false
  private timer: NodeJS.Timeout | undefined
  private readonly active = new Set<Promise<void>>()
  private lastPrune = 0
  private readonly agents: { http: http.Agent, https: https.Agent }
  private readonly onChange = () => this.tick()

  constructor (private readonly store: EventStore, private readonly hub: EventHub, private readonly opts: DelivererOptions) {
    const agentOptions = { keepAlive: true, maxSockets: 4, ...(opts.allowPrivate ? {} : { lookup: checkedLookup }) }
    this.agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) }
  }

  start (): void {
    this.hub.on('change', this.onChange)
    this.tick()
  }

  async close (): Promise<void> {
    this.closed = true
    this.hub.off('change', this.onChange)
    if (this.timer !== undefined) clearTimeout(this.timer)
    await Promise.allSettled([...this.active])
    this.agents.http.destroy()
    this.agents.https.destroy()
  }

  /** Leases what is due, up to the free concurrency; looks again in a second whatever happens. */
  private tick (): void {
    if (this.closed) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => this.tick(), IDLE_MS)
    this.timer.unref()
    const free = this.opts.concurrency - this.running
    if (free <= 0) return
    this.running += free
    const work = this.store.lease(free, this.opts.leaseMs).then((leases) => {
      this.running -= free - leases.length
      for (const lease of leases) {
        const job = this.deliver(lease).catch((err: unknown) => {
          this.opts.log.error({ err, subscription: lease.id }, 'webhook delivery failed unexpectedly')
        }).finally(() => {
          this.running--
          this.active.delete(job)
          // One subscription done: there may be more to send, to it or to another.
          if (leases.length > 0) this.tick()
        })
        this.active.add(job)
      }
      if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = Date.now()
        return this.store.prune()
      }
    }, (err: unknown) => {
      this.running -= free
      if (!this.closed) this.opts.log.warn({ err }, 'webhook: leasing subscriptions failed')
    })
    const tracked = work.finally(() => this.active.delete(tracked))
    this.active.add(tracked)
  }

  private async deliver (lease: Lease): Promise<void> {
    const started = Date.now()
    const page = await this.store.feed({ after: lease.after, organisation: lease.organisation ?? undefined, limit: BATCH })
    const webhook = new Webhook(lease.secret)
    const attempts: Attempt[] = []
    let after: Position = lease.after
    let failed = false
    // Only a subscription marked failing lets the retention remove what it has not received
    // (sql/functions/events_retention.sql): the loss is recorded as an attempt, then it goes on.
    if (comparePositions(after, page.removed) < 0) {
      const eventId = `evt_${page.removed.seq}`
      attempts.push({ eventId, statusCode: null, latencyMs: 0, at: new Date(), error: `not sent: the events up to ${eventId} were removed by the retention (EVENTS_RETENTION) while this subscription was failing` })
      this.opts.log.warn({ subscription: lease.id, upTo: eventId }, 'webhook: events removed by the retention before their delivery were skipped')
      after = page.removed
    }
    for (const event of page.events) {
      // Past half the lease, stop: what is left goes under a new one, never under an expired one.
      if (this.closed || Date.now() - started > this.opts.leaseMs / 2) break
      if (!lease.types.includes(event.type)) { after = positionOf(event); continue }
      const attempt = await this.post(lease.url, webhook, event)
      attempts.push(attempt)
      if (attempt.statusCode === null || attempt.statusCode < 200 || attempt.statusCode > 299) { failed = true; break }
      after = positionOf(event)
    }
    // Every event of the page passed (or was not of a wanted type), and the page was not full:
    // nothing else is below the horizon, so the position may move up to it.
    if (!failed && page.events.length < BATCH && !this.closed && Date.now() - started <= this.opts.leaseMs / 2) {
      const horizon = { txid: page.horizon, seq: '0' }
      if (comparePositions(horizon, after) > 0) after = horizon
    }
    const failures = failed ? lease.failures + 1 : 0
    const failingSince = lease.failing_since ?? new Date()
    const failing = failed && (Date.now() - failingSince.getTime()) / 1000 > this.opts.retryForSeconds
    const retryInMs = failed ? (failing ? MAX_BACKOFF_MS : backoffMs(failures, this.opts.retryBaseMs)) : 0
    const kept = await this.store.record(lease, { after, attempts, failed, retryInMs, failing })
    if (!kept) this.opts.log.warn({ subscription: lease.id }, 'webhook: lease lost before recording; the next holder sends again')
  }

  private post (target: string, webhook: Webhook, event: EventRow): Promise<Attempt> {
    const body = JSON.stringify(cloudEvent(event))
    const eventId = `evt_${event.seq}`
    const at = new Date()
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'source-registry-webhooks',
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': webhook.sign(eventId, at, body)
    }
    const t0 = performance.now()
    const done = (statusCode: number | null, error: string | null): Attempt => ({ eventId, statusCode, error, at, latencyMs: Math.round((performance.now() - t0) * 10) / 10 })
    return new Promise((resolve) => {
      let url: URL
      try { url = new URL(target) } catch { resolve(done(null, 'the URL is not valid')); return }
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
      // An IP literal skips DNS, so its check is here; a name's is in checkedLookup.
      const why = this.opts.allowPrivate || isIP(host) === 0 ? undefined : refusedAddress(host)
      if (why !== undefined || (!this.opts.allowPrivate && url.protocol !== 'https:')) {
        resolve(done(null, why ?? 'only https is allowed'))
        return
      }
      const client = url.protocol === 'https:' ? https : http
      const req = client.request(url, { method: 'POST', headers, agent: url.protocol === 'https:' ? this.agents.https : this.agents.http, timeout: this.opts.timeoutMs }, (res) => {
        res.resume()
        res.on('end', () => resolve(done(res.statusCode ?? null, res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300 ? null : `HTTP ${res.statusCode}`)))
        res.on('error', (err) => resolve(done(res.statusCode ?? null, err.message)))
      })
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs)
      req.on('close', () => clearTimeout(timer))
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.opts.timeoutMs} ms`)))
      req.on('error', (err) => resolve(done(null, err.message.slice(0, 500))))
      req.end(body)
    })
  }
}

function positionOf (e: EventRow): Position {
  return { txid: e.txid, seq: e.seq }
}
