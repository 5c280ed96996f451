// Admission for large request bodies. A 1,000-feature collection is ~100 KB of JSON that becomes
// tens of thousands of objects while it is checked and encoded; many of them at once multiply
// the service's memory (docs/performance.md), and PostgreSQL cannot insert more of them at a
// time than it has cores anyway. So at most LARGE_BODY_CONCURRENCY requests whose body is over
// LARGE_BODY_BYTES (or of unknown length) are read and processed at once; the others wait, in
// order, before their body is read (it stays in the socket), up to LARGE_BODY_QUEUE of them.
// Beyond that the answer is 503 with Retry-After: the server is busy, not the client wrong.
// A request holds its slot until its handler has answered, even when the client left sooner.
// Routes opt in by spreading `app.largeBodies` (preParsing, preHandler and onSend hooks).
import fp from 'fastify-plugin'
import type { FastifyRequest, onSendHookHandler, preHandlerAsyncHookHandler, preParsingAsyncHookHandler } from 'fastify'
import type { LimitsConfig } from '../config.js'
import { ApiError } from '../errors.js'
import { AdmissionQueue } from '../http/admission-queue.js'

declare module 'fastify' {
  interface FastifyInstance {
    largeBodies: LargeBodyHooks
  }
}

interface Slot {
  state: 'waiting' | 'admitted' | 'handling' | 'released'
  release?: () => void
  cancel?: () => void
}

/** The hooks a route spreads into its options to take part: `{ ...app.largeBodies, schema, … }`. */
export interface LargeBodyHooks {
  preParsing: preParsingAsyncHookHandler
  preHandler: preHandlerAsyncHookHandler
  onSend: onSendHookHandler
}

export default fp<{ config: LimitsConfig }>(async (app, { config }) => {
  const queue = new AdmissionQueue(config.LARGE_BODY_CONCURRENCY, config.LARGE_BODY_QUEUE)
  const slots = new WeakMap<FastifyRequest, Slot>()
  const release = (slot: Slot): void => {
    if (slot.state === 'released') return
    slot.state = 'released'
    slot.release?.()
  }

  // Before the body is read: a slot, a place in the queue, or 503.
  const preParsing: preParsingAsyncHookHandler = async (request, reply, payload) => {
    const length = request.headers['content-length']
    // Small bodies never wait; one declared over BODY_LIMIT_BYTES gets its 413 from the parser
    // at once rather than a place in the queue.
    if (length !== undefined && (Number(length) <= config.LARGE_BODY_BYTES || Number(length) > config.BODY_LIMIT_BYTES)) return payload
    // A client that left while authentication ran: its 'close' has passed, so a slot taken now
    // would never be given back. Reading its body fails on its own.
    if (reply.raw.closed) return payload
    const slot: Slot = { state: 'waiting' }
    slots.set(request, slot)
    // 'close': the response was sent or the client went away. A waiting request leaves the queue;
    // one whose body is still being read gives its slot back (nothing more will run for it);
    // one already in its handler keeps the slot until the handler is done (onSend), so the
    // work of clients that left stays within LARGE_BODY_CONCURRENCY.
    reply.raw.once('close', () => {
      if (slot.state === 'waiting') slot.cancel?.()
      else if (slot.state === 'admitted') release(slot)
    })
    const admitted = await queue.admit((cancel) => { slot.cancel = cancel })
    // The client left while waiting: reading its body fails on its own.
    if (admitted === 'cancelled') return payload
    if (admitted === 'full') {
      slot.state = 'released'
      throw new ApiError('SERVICE_UNAVAILABLE', `The server is busy with other large requests (${queue.concurrency} at a time, ${queue.maxWaiting} waiting); retry in a moment.`, { headers: { 'retry-after': '1' } })
    }
    slot.release = admitted
    slot.state = 'admitted'
    if (reply.raw.closed) release(slot)
    return payload
  }

  // Body read and valid: the handler is about to run. Not for a client that already left —
  // nobody would read the answer; 499 (nginx's "client closed request") goes to the log only.
  const preHandler: preHandlerAsyncHookHandler = async (request, reply) => {
    const slot = slots.get(request)
    if (slot === undefined) return
    if (reply.raw.closed) {
      release(slot)
      return reply.code(499).send()
    }
    slot.state = 'handling'
  }

  // The handler (or the error handler) has its answer: the work is done.
  const onSend: onSendHookHandler = (request, _reply, payload, done) => {
    const slot = slots.get(request)
    if (slot !== undefined) release(slot)
    done(null, payload)
  }

  app.decorate('largeBodies', { preParsing, preHandler, onSend } satisfies LargeBodyHooks)
}, { name: 'large-bodies', fastify: '5.x' })
