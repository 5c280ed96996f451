// GET /events (the feed, paged by opaque cursors), GET /events/stream (the same as Server-Sent
// Events, live) and GET /asyncapi.json (the events and webhooks described in AsyncAPI 3).
// An organisation sees its own sources' events and the conflicts seen from them; an admin every
// organisation's, or one's with ?organisation=.
import { PassThrough } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { EventsConfig } from '../config.js'
import { ApiError, errorResponses } from '../errors.js'
import { sentAs } from '../http/openapi.js'
import { SECURITY } from '../http/security.js'
import { asyncApiDocument } from './asyncapi.js'
import { cloudEvent } from './cloud-event.js'
import { type CursorCodec, type Position, START, comparePositions } from './cursor.js'
import type { EventStore } from './events.store.js'
import { FeedQuerySchema, FeedSchema, StreamHeadersSchema, StreamQuerySchema } from './events.schema.js'
import type { EventHub } from './hub.js'

const TAGS = ['Events']
const STREAM_PAGE = 500

export interface EventRoutesOptions {
  config: EventsConfig
  store: EventStore
  hub: EventHub
  cursors: CursorCodec
}

/** Whose events a caller reads: its organisation's; an admin's choice, or all. */
function organisationOf (request: FastifyRequest, asked: string | undefined): string | undefined {
  const { account } = request
  if (account.scope === 'all') return asked
  if (asked !== undefined && asked !== account.organisation) throw new ApiError('FORBIDDEN', 'Only admins may read another organisation\'s events.')
  return account.organisation
}

const eventsRoutes: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (app, { config, store, hub, cursors }) => {
  /** The oldest cursor still served: 410 for a position before it (events after it were removed). */
  function expired (where: string, removed: Position): ApiError {
    const oldest = cursors.encode(removed)
    return new ApiError('CURSOR_EXPIRED', `${where} lies before the oldest event kept (EVENTS_RETENTION): events after it were removed. Resume from \`oldest\`, the oldest cursor still served.`, { fields: { oldest } })
  }

  async function positionOf (cursor: string | undefined, where: string): Promise<Position | undefined> {
    if (cursor === undefined) return undefined
    const p = cursors.decode(cursor)
    const state = p === undefined ? undefined : await store.positionState(p)
    if (p === undefined || state?.known !== true) {
      throw new ApiError('INVALID_CURSOR', `${where} is not a cursor this service gave out: use the \`next\` of GET /events, or an SSE message's id.`, { details: [{ pointer: where, message: 'unknown cursor' }] })
    }
    if (comparePositions(p, state.removed) < 0) throw expired(where, state.removed)
    return p
  }

  app.get('/events', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'listEvents',
      summary: 'The change feed: events of your sources and their conflicts, oldest first',
      description: 'Resume with ?after=<next>. The feed never skips an event: an event whose transaction is still open is served once it commits, before anything written after it began. Events older than the retention are removed; a cursor from before the oldest kept event is answered 410 `CURSOR_EXPIRED` with `oldest`, the oldest cursor still served (without ?after= the feed starts at the oldest kept event).',
      tags: TAGS,
      security: SECURITY,
      querystring: FeedQuerySchema,
      response: { 200: FeedSchema, ...errorResponses(400, 401, 403, 410, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const organisation = organisationOf(request, request.query.organisation)
    const limit = request.query.limit === undefined ? 100 : Number(request.query.limit)
    if (limit < 1 || limit > 1000) throw new ApiError('VALIDATION_FAILED', `limit must be 1–1000, not ${limit}.`, { details: [{ pointer: '?limit', message: 'must be 1–1000' }] })
    const asked = await positionOf(request.query.after, '?after')
    const after = asked ?? START
    const page = await store.feed({ after, organisation, limit })
    // A batch of the retention may have run between the check and this read.
    if (asked !== undefined && comparePositions(asked, page.removed) < 0) throw expired('?after', page.removed)
    const last = page.events.at(-1)
    let next: Position = last !== undefined ? { txid: last.txid, seq: last.seq } : after
    // A page short of the limit read everything below the horizon: the next read may start there.
    if (page.events.length < limit) {
      const horizon = { txid: page.horizon, seq: '0' }
      if (comparePositions(horizon, next) > 0) next = horizon
    }
    void reply.header('cache-control', 'no-store')
    return { events: page.events.map(cloudEvent), next: cursors.encode(next) }
  })

  const open = new Set<() => void>()
  app.addHook('preClose', async () => { for (const close of [...open]) close() })

  app.get('/events/stream', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'streamEvents',
      summary: 'The change feed, live, as Server-Sent Events',
      description: 'Each message is one event: `id:` its cursor, `event:` its type, `data:` the CloudEvent. Reconnect with Last-Event-ID (EventSource does) to resume without a gap; a comment is sent at least every 15 s. A Last-Event-ID (or ?after=) from before the oldest event kept (the retention) is answered 410 `CURSOR_EXPIRED` with `oldest`; a stream that falls that far behind is closed, and its reconnection gets the 410.',
      tags: TAGS,
      security: SECURITY,
      querystring: StreamQuerySchema,
      headers: StreamHeadersSchema,
      response: { 200: sentAs('text/event-stream', Type.String(), 'An endless text/event-stream.'), ...errorResponses(400, 401, 403, 410, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const organisation = organisationOf(request, request.query.organisation)
    const header = request.headers['last-event-id']
    let position = await positionOf(header, 'Last-Event-ID') ?? await positionOf(request.query.after, '?after') ?? await store.currentPosition()
    const stream = new PassThrough()
    let closed = false
    let reading = false
    let again = false
    const close = () => {
      if (closed) return
      closed = true
      hub.off('change', wake)
      clearInterval(heartbeat)
      open.delete(close)
      stream.end()
    }
    async function read (): Promise<void> {
      for (;;) {
        const page = await store.feed({ after: position, organisation, limit: STREAM_PAGE })
        if (closed) return
        // Behind the retention: never a silent gap; the reconnection (Last-Event-ID) gets the 410.
        if (comparePositions(position, page.removed) < 0) { close(); return }
        let text = ''
        for (const e of page.events) {
          position = { txid: e.txid, seq: e.seq }
          text += `id: ${cursors.encode(position)}\nevent: ${e.type}\ndata: ${JSON.stringify(cloudEvent(e))}\n\n`
        }
        if (text !== '') stream.write(text)
        if (page.events.length < STREAM_PAGE) {
          const horizon = { txid: page.horizon, seq: '0' }
          if (comparePositions(horizon, position) > 0) position = horizon
          return
        }
      }
    }
    function wake (): void {
      if (closed) return
      if (reading) { again = true; return }
      reading = true
      read().catch((err: unknown) => {
        request.log.warn({ err }, 'events stream: reading the feed failed; the client resumes with Last-Event-ID')
        close()
      }).finally(() => {
        reading = false
        if (again) { again = false; wake() }
      })
    }
    const heartbeat = setInterval(() => stream.write(': heartbeat\n\n'), config.EVENTS_HEARTBEAT_MS)
    hub.on('change', wake)
    open.add(close)
    // The response's close, not the request's (which closes once its body is read).
    reply.raw.on('close', close)
    stream.write(': connected\nretry: 2000\n\n')
    wake()
    // The stream is the body, not the string the schema names (Type.String() documents its text).
    const untyped = reply as unknown as FastifyReply
    return untyped
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-accel-buffering', 'no')
      .send(stream)
  })

  app.get('/asyncapi.json', {
    config: { rateLimit: false },
    schema: {
      operationId: 'getAsyncApi',
      summary: 'The events, the stream and the webhooks as an AsyncAPI 3 document',
      tags: TAGS,
      security: [],
      response: {
        200: sentAs('application/json', Type.Object({ asyncapi: Type.Literal('3.0.0') }, { additionalProperties: true }), 'The AsyncAPI 3.0 document.'),
        ...errorResponses(500)
      }
    }
  }, async () => asyncApiDocument() as { asyncapi: '3.0.0' })
}

export default eventsRoutes
