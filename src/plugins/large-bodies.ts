// Admission for large request bodies. A 1,000-feature collection is ~100 KB of JSON that becomes
// tens of thousands of objects while it is checked and encoded; sixteen of them at once took
// the service's memory from ~150 MB to ~390 MB, and PostgreSQL cannot insert more of them at a
// time than it has cores anyway. So at most LARGE_BODY_CONCURRENCY requests whose body is over
// LARGE_BODY_BYTES (or of unknown length) are read and processed at once; the others wait, in
// order, before their body is read (it stays in the socket), up to LARGE_BODY_QUEUE of them.
// Beyond that the answer is 503 with Retry-After: the server is busy, not the client wrong.
// Routes opt in with `preParsing: [app.admitLargeBody]`.
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, preParsingAsyncHookHandler } from 'fastify'
import type { Config } from '../config.js'
import { ApiError } from '../errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    admitLargeBody: preParsingAsyncHookHandler
  }
}

export class AdmissionQueue {
  private active = 0
  private readonly waiting: Array<() => void> = []

  constructor (readonly concurrency: number, readonly maxWaiting: number) {}

  get stats (): { active: number, waiting: number } {
    return { active: this.active, waiting: this.waiting.length }
  }

  /**
   * Resolves to a release function once a slot is free; false at once when the queue is full.
   * `onCancel` receives a function that withdraws the waiting entry (when the client goes away).
   */
  async admit (onCancel: (cancel: () => void) => void): Promise<(() => void) | false> {
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.active--
    }
    if (this.active < this.concurrency) {
      this.active++
      return release
    }
    if (this.waiting.length >= this.maxWaiting) return false
    return new Promise((resolve) => {
      const admitted = (): void => { resolve(release) }
      this.waiting.push(admitted)
      onCancel(() => {
        const i = this.waiting.indexOf(admitted)
        if (i !== -1) this.waiting.splice(i, 1)
      })
    })
  }
}

export default fp<{ config: Config }>(async (app, { config }) => {
  const queue = new AdmissionQueue(config.LARGE_BODY_CONCURRENCY, config.LARGE_BODY_QUEUE)

  app.decorate('admitLargeBody', async function (request: FastifyRequest, reply: FastifyReply, payload) {
    const length = request.headers['content-length']
    // Small bodies never wait; one declared over BODY_LIMIT_BYTES gets its 413 from the parser
    // at once rather than a place in the queue.
    if (length !== undefined && (Number(length) <= config.LARGE_BODY_BYTES || Number(length) > config.BODY_LIMIT_BYTES)) return payload
    // A client that left while authentication ran: its 'close' has passed, so a slot taken now
    // would never be given back. Reading its body fails on its own.
    if (reply.raw.closed) return payload
    const slot: { release?: () => void, cancel?: () => void, closed: boolean } = { closed: false }
    // 'close' comes once the response is sent or the connection is gone, whichever is first.
    reply.raw.once('close', () => {
      slot.closed = true
      if (slot.release !== undefined) slot.release()
      else slot.cancel?.()
    })
    const admitted = await queue.admit((cancel) => { slot.cancel = cancel })
    if (admitted === false) {
      throw new ApiError('SERVICE_UNAVAILABLE', `The server is busy with other large requests (${queue.concurrency} at a time, ${queue.maxWaiting} waiting); retry in a moment.`, { headers: { 'retry-after': '1' } })
    }
    slot.release = admitted
    if (slot.closed) admitted()
    return payload
  })
}, { name: 'large-bodies', fastify: '5.x' })
