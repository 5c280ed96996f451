// The AsyncAPI 3.0 document of GET /asyncapi.json: the event types of events.schema.ts as messages
// (their payload the CloudEvent schema there), on the SSE stream and on webhooks.
import { CloudEventSchema, ConflictEventDataSchema, EVENT_TYPE_SUMMARIES, EVENT_TYPES, NoteEventDataSchema, ResolvedEventDataSchema, SourceEventDataSchema, StanceEventDataSchema, WatchEventDataSchema } from './events.schema.js'

const plain = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema))

let built: Record<string, unknown> | undefined

export function asyncApiDocument (): Record<string, unknown> {
  if (built !== undefined) return built
  const name = (type: string) => type.replace('.', '_')
  const messages = Object.fromEntries(EVENT_TYPES.map((type) => [name(type), {
    name: type,
    title: type,
    contentType: 'application/json',
    summary: EVENT_TYPE_SUMMARIES[type],
    payload: { $ref: '#/components/schemas/CloudEvent' }
  }]))
  const refs = Object.fromEntries(EVENT_TYPES.map((type) => [name(type), { $ref: `#/components/messages/${name(type)}` }]))
  built = {
    asyncapi: '3.0.0',
    info: {
      title: 'Source Registry events',
      version: '1',
      description: 'Change events of sources and their conflicts (detected, ended, a stance changed, resolved, a note added) and of watched areas (a source started to overlap one), as CloudEvents 1.0, written in the changing transaction. Read them from the feed (GET /events, see /openapi.json), live as Server-Sent Events (GET /events/stream), or as webhooks (POST /subscriptions) signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature).'
    },
    defaultContentType: 'application/json',
    channels: {
      stream: {
        address: '/events/stream',
        title: 'Server-Sent Events',
        description: 'Each SSE message: id: a cursor (send it back as Last-Event-ID), event: the type, data: the CloudEvent. Events older than the retention (EVENTS_RETENTION, 30 days by default) are removed: a Last-Event-ID from before the oldest kept event is answered 410 with code CURSOR_EXPIRED and `oldest`, the oldest cursor still served (never a silent gap).',
        messages: refs
      },
      webhook: {
        address: '{subscriptionUrl}',
        title: 'Webhooks',
        description: 'An HTTP POST per event to the URL of a subscription, in order per subscription, at least once; retried with backoff until a 2xx. The retention keeps every event an active subscription has not received; a subscription marked failing loses those older than the retention, and its deliveries list records what was skipped.',
        parameters: { subscriptionUrl: { description: 'The url of a subscription (POST /subscriptions).' } },
        messages: refs
      }
    },
    operations: {
      receiveStream: { action: 'receive', channel: { $ref: '#/channels/stream' }, messages: Object.keys(refs).map((k) => ({ $ref: `#/channels/stream/messages/${k}` })) },
      receiveWebhook: { action: 'receive', channel: { $ref: '#/channels/webhook' }, messages: Object.keys(refs).map((k) => ({ $ref: `#/channels/webhook/messages/${k}` })) }
    },
    components: {
      messages,
      schemas: {
        CloudEvent: plain(CloudEventSchema),
        SourceEventData: plain(SourceEventDataSchema),
        ConflictEventData: plain(ConflictEventDataSchema),
        StanceEventData: plain(StanceEventDataSchema),
        ResolvedEventData: plain(ResolvedEventDataSchema),
        NoteEventData: plain(NoteEventDataSchema),
        WatchEventData: plain(WatchEventDataSchema)
      }
    }
  }
  return built
}
