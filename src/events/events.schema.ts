// TypeBox schemas of the events (CloudEvents 1.0), the feed, the stream and the webhook subscriptions.
import { type Static, Type } from '@sinclair/typebox'
import { UtcDateTimeSchema } from '../schemas/primitives.js'

/**
 * Every event type, each with its one-line summary (the AsyncAPI document's): the one list. The
 * SQL keeps its own, the CHECKs of sql/018_events.sql, and test/events/event-types.test.ts holds
 * those and the AsyncAPI document to this one.
 */
export const EVENT_TYPE_SUMMARIES = {
  'source.created': 'A source of yours was created.',
  'source.updated': 'A source of yours was updated.',
  'source.deleted': 'A source of yours was deleted.',
  'conflict.started': 'A source of yours began conflicting with another (of any organisation).',
  'conflict.ended': 'A source of yours stopped conflicting with another (of any organisation).',
  'conflict.stance_changed': 'A party (you or the other) changed its stance on a conflict of a source of yours.',
  'conflict.resolved': 'A conflict of a source of yours was resolved: the overlap disappeared (edit, carve-out or delete).',
  'conflict.note_added': 'A note was added to the thread of a conflict of a source of yours.',
  'watch.matched': 'A source (of any organisation) started to overlap an area your organisation watches (POST /watches).'
} as const
type EventType = keyof typeof EVENT_TYPE_SUMMARIES
export const EVENT_TYPES = Object.keys(EVENT_TYPE_SUMMARIES) as EventType[]
export const EventTypeSchema = Type.Union(EVENT_TYPES.map((t) => Type.Literal(t)))

const SourceIdSchema = Type.String({ pattern: '^src_[0-9A-Za-z]{13,}$' })

export const SourceEventDataSchema = Type.Object({
  id: SourceIdSchema,
  feature_id: Type.String(),
  start_at: UtcDateTimeSchema,
  end_at: UtcDateTimeSchema,
  version: Type.Optional(Type.Integer({ description: 'The source\'s version after the change (where sources have versions).' }))
}, { description: 'source.*: the source as it is after the change (before it, for source.deleted).' })

export const ConflictEventDataSchema = Type.Object({
  source_id: SourceIdSchema,
  other_id: { ...SourceIdSchema, description: 'The source it conflicts with, maybe another organisation\'s: its id only, as GET /sources/?id= shows it.' },
  overlap_m2: Type.Number(),
  overlap_ratio: Type.Number({ description: 'overlap_m2 over the area of source_id, 0–1.' }),
  start_at: UtcDateTimeSchema,
  end_at: UtcDateTimeSchema
}, { description: 'conflict.*: the pair seen from source_id (your source); start_at/end_at is the overlap of the periods.' })

const ConflictIdSchema = Type.String({ pattern: '^cfl_[0-9a-f]{32}$' })
const StanceSchema = Type.Union(['open', 'acknowledged', 'disputed', 'accepted'].map((s) => Type.Literal(s)))
const ConflictStateFields = {
  conflict_id: { ...ConflictIdSchema, description: 'The conflict (GET /conflicts/{id}).' },
  source_id: { ...SourceIdSchema, description: 'Your source in the conflict (the event\'s subject).' },
  other_id: { ...SourceIdSchema, description: 'The other party\'s source: its id only.' },
  state: Type.Union(['open', 'in_review', 'disputed', 'accepted', 'resolved'].map((s) => Type.Literal(s)), { description: 'The conflict\'s state after the change.' }),
  version: Type.Integer({ minimum: 1, description: 'The conflict\'s version after the change (its ETag).' })
}

export const StanceEventDataSchema = Type.Object({
  ...ConflictStateFields,
  party_id: { ...SourceIdSchema, description: 'The source whose party changed its stance (yours or the other).' },
  from: StanceSchema,
  to: StanceSchema,
  reason: Type.Union([Type.String(), Type.Null()])
}, { description: 'conflict.stance_changed: a party\'s stance changed.' })

export const ResolvedEventDataSchema = Type.Object({
  ...ConflictStateFields,
  resolution: Type.Union(['edited', 'carved', 'deleted', 'recomputed'].map((s) => Type.Literal(s))),
  resolved_at: UtcDateTimeSchema
}, { description: 'conflict.resolved: the overlap disappeared, and how.' })

export const NoteEventDataSchema = Type.Object({
  ...ConflictStateFields,
  note_id: Type.Integer(),
  own: Type.Boolean({ description: 'Whether your organisation wrote the note (the other\'s name is never shown).' }),
  body: Type.String()
}, { description: 'conflict.note_added: a note in the conflict\'s thread (GET /conflicts/{id}/notes).' })

export const WatchEventDataSchema = Type.Object({
  watch_id: Type.String({ pattern: '^wat_[0-9a-f]{32}$', description: 'Your watch (GET /watches/{id}).' }),
  source_id: { ...SourceIdSchema, description: 'The source that started to overlap it, maybe another organisation\'s: its id only.' },
  overlap_m2: Type.Number({ description: 'The area of the source within the watched area, m² on the WGS 84 ellipsoid (as area_m2).' }),
  start_at: UtcDateTimeSchema,
  end_at: UtcDateTimeSchema
}, { description: 'watch.matched: a source started to overlap a watched area; start_at/end_at is the overlap of the source\'s period and the watch\'s. No geometry, no attributes.' })

export const CloudEventSchema = Type.Object({
  specversion: Type.Literal('1.0'),
  id: Type.String({ pattern: '^evt_[0-9]+$', description: 'Unique per event; also the webhook-id of its deliveries.' }),
  source: Type.Literal('/events'),
  type: EventTypeSchema,
  time: UtcDateTimeSchema,
  subject: { ...SourceIdSchema, description: 'The source the event is about (for watch.matched: the source that overlaps the watch).' },
  datacontenttype: Type.Literal('application/json'),
  data: Type.Union([SourceEventDataSchema, ConflictEventDataSchema, StanceEventDataSchema, ResolvedEventDataSchema, NoteEventDataSchema, WatchEventDataSchema])
}, { description: 'A CloudEvents 1.0 event in its JSON format.' })
export type CloudEvent = Static<typeof CloudEventSchema>

export const CursorSchema = Type.String({ minLength: 1, maxLength: 100, description: 'An opaque position in the feed, as `next` (or an SSE id:) gave it.' })
// No U+0000 (%00): PostgreSQL text cannot hold it.
const OrganisationParam = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]+$', description: 'Admins: only this organisation\'s events (others always get their own).' })

export const FeedQuerySchema = Type.Object({
  after: Type.Optional(CursorSchema),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'At most this many events, 1–1000 (100 by default).' })),
  organisation: Type.Optional(OrganisationParam)
}, { additionalProperties: false })

export const FeedSchema = Type.Object({
  events: Type.Array(CloudEventSchema, { description: 'Oldest first.' }),
  next: Type.String({ description: 'Pass as ?after= to read on; it never skips an event.' })
})

export const StreamQuerySchema = Type.Object({
  after: Type.Optional({ ...CursorSchema, description: 'Start after this position (Last-Event-ID takes precedence); without either, the stream starts now.' }),
  organisation: Type.Optional(OrganisationParam)
}, { additionalProperties: false })

export const StreamHeadersSchema = Type.Object({
  'last-event-id': Type.Optional({ ...CursorSchema, description: 'Resume after this event: the id: of the last message received.' })
})

// Subscriptions.

export const SubscriptionIdSchema = Type.String({ pattern: '^sub_[0-9A-Za-z]{22}$' })

export const CreateSubscriptionSchema = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^[^\\u0000]+$', description: 'https URL events are POSTed to; it must not resolve to a loopback, private, link-local or metadata address.' }),
  types: Type.Array(EventTypeSchema, { minItems: 1, uniqueItems: true }),
  organisation: Type.Optional({ ...OrganisationParam, description: 'Admins: whose events to send (without it: every organisation\'s). Others: their own, always.' })
}, { additionalProperties: false })

export const SubscriptionSchema = Type.Object({
  id: SubscriptionIdSchema,
  url: Type.String(),
  types: Type.Array(EventTypeSchema),
  organisation: Type.Union([Type.String(), Type.Null()], { description: 'Whose events; null: every organisation\'s.' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('failing')], { description: 'failing: deliveries have failed for longer than WEBHOOK_RETRY_FOR; they are still retried, hourly.' }),
  failures: Type.Integer({ description: 'Failed attempts in a row.' }),
  failing_since: Type.Optional(UtcDateTimeSchema),
  next_attempt_at: UtcDateTimeSchema,
  created_at: UtcDateTimeSchema
})
export type SubscriptionView = Static<typeof SubscriptionSchema>

export const CreatedSubscriptionSchema = Type.Object({
  ...SubscriptionSchema.properties,
  secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/=]+$', description: 'The Standard Webhooks signing secret, shown this once.' }),
  message: Type.String()
})

export const SubscriptionListSchema = Type.Object({ subscriptions: Type.Array(SubscriptionSchema) })

export const ListSubscriptionsQuerySchema = Type.Object({
  organisation: Type.Optional({ ...OrganisationParam, description: 'Admins: only this organisation\'s subscriptions.' })
}, { additionalProperties: false })

export const SubscriptionQuerySchema = Type.Object({ id: SubscriptionIdSchema }, { additionalProperties: false })

export const DeliveriesSchema = Type.Object({
  deliveries: Type.Array(Type.Object({
    event_id: Type.String(),
    attempted_at: UtcDateTimeSchema,
    status_code: Type.Optional(Type.Integer({ description: 'The receiver\'s status; absent when it gave none.' })),
    latency_ms: Type.Number(),
    error: Type.Optional(Type.String())
  }), { description: 'The latest 100 attempts, newest first (kept a week).' })
})

export const DeletedSchema = Type.Object({ message: Type.String() })
