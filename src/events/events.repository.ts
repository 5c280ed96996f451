// SQL of the feed and the webhook subscriptions (sql/018_events.sql). Functions take the Kysely
// handle (or a transaction) first; callers own it.
//
// The feed serves only events below the horizon, events_horizon() (sql/functions/events.sql): every
// transaction of this database older than it has ended, so no event can appear behind a position
// once served.
import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import type { Position } from './cursor.js'

export interface EventRow {
  txid: string
  seq: string
  type: string
  subject: string
  organisation: string | null
  time: string
  data: Record<string, unknown>
}

export interface FeedQuery {
  after: Position
  /** One organisation's events; undefined: every organisation's. */
  organisation: string | undefined
  limit: number
}

export interface FeedPage {
  events: EventRow[]
  /** The horizon when read: every event of an older transaction was visible to this read. */
  horizon: string
  /** The retention's mark when read: every event up to it is removed, none after it. */
  removed: Position
}

// The retention's mark (sql/033_events_retention.sql), read in the same snapshot as the events.
const REMOVED = sql`(SELECT r.removed_txid::text || '.' || r.removed_seq FROM events_retention AS r)`

function positionText (text: string | null | undefined): Position {
  const [txid = '0', seq = '0'] = (text ?? '0.0').split('.')
  return { txid, seq }
}

export async function readFeed (db: Db, q: FeedQuery): Promise<FeedPage> {
  const { rows } = await sql<EventRow & { horizon: string, removed: string }>`
    WITH h AS (SELECT events_horizon() AS xmin, ${REMOVED} AS removed)
    SELECT h.xmin::text AS horizon, h.removed, e.txid::text AS txid, e.seq::text AS seq, e.type, e.subject, e.organisation,
           events_utc(e.time) AS time, e.data
    FROM h LEFT JOIN LATERAL (
      SELECT * FROM events AS e
      WHERE (e.txid, e.seq) > (${q.after.txid}::xid8, ${q.after.seq}::bigint) AND e.txid < h.xmin
        ${q.organisation !== undefined ? sql`AND e.organisation = ${q.organisation}` : sql``}
      ORDER BY e.txid, e.seq
      LIMIT ${q.limit}
    ) AS e ON true
    ORDER BY e.txid, e.seq`.execute(db)
  const horizon = rows[0]?.horizon ?? '0'
  return {
    horizon,
    removed: positionText(rows[0]?.removed),
    events: rows.filter((r) => r.seq !== null).map(({ horizon: _, removed: __, ...e }) => e)
  }
}

export interface PositionState {
  /** Whether the position could have been given out by this database (not beyond its transactions). */
  known: boolean
  /** The retention's mark: a position before it missed removed events. */
  removed: Position
}

export async function positionState (db: Db, p: Position): Promise<PositionState> {
  const { rows } = await sql<{ known: boolean, removed: string }>`
    SELECT ${p.txid}::xid8 <= pg_snapshot_xmax(pg_current_snapshot()) AS known, ${REMOVED} AS removed`.execute(db)
  return { known: rows[0]?.known === true, removed: positionText(rows[0]?.removed) }
}

/**
 * One batch of the retention: removes up to `batch` of the oldest events older than `retentionMs`
 * (events_remove_expired, sql/functions/events_retention.sql), in this statement's transaction.
 * Undefined when another session is removing.
 */
export async function removeExpiredEvents (db: Db, retentionMs: number, batch: number): Promise<number | undefined> {
  const { rows } = await sql<{ removed: number | null }>`
    SELECT events_remove_expired(${retentionMs}::double precision * interval '1 millisecond', ${batch}::integer) AS removed`.execute(db)
  return rows[0]?.removed ?? undefined
}

/** Now, as a position: every event written from here on comes after it. */
export async function currentPosition (db: Db): Promise<Position> {
  const { rows } = await sql<{ txid: string }>`SELECT events_horizon()::text AS txid`.execute(db)
  return { txid: rows[0]?.txid ?? '0', seq: '0' }
}

export async function vacuumEvents (db: Db): Promise<void> {
  await sql`VACUUM (ANALYZE) events`.execute(db)
}

export interface FeedHead {
  /** The last event below the horizon, as "txid.seq" ('' when none): it changes exactly when events become servable. */
  last: string
  /** Whether events above the horizon exist (written by transactions that may still commit). */
  pending: boolean
}

export async function readHead (db: Db): Promise<FeedHead> {
  const { rows } = await sql<{ last: string | null, pending: boolean }>`
    WITH h AS (SELECT events_horizon() AS xmin)
    SELECT (SELECT e.txid::text || '.' || e.seq FROM events AS e WHERE e.txid < h.xmin ORDER BY e.txid DESC, e.seq DESC LIMIT 1) AS last,
           EXISTS (SELECT 1 FROM events AS e WHERE e.txid >= h.xmin) AS pending
    FROM h`.execute(db)
  return { last: rows[0]?.last ?? '', pending: rows[0]?.pending === true }
}

// Subscriptions.

export type SubscriptionStatus = 'active' | 'failing'

export interface SubscriptionRow {
  id: string
  organisation: string | null
  url: string
  types: string[]
  created_at: Date
  status: SubscriptionStatus
  failures: number
  failing_since: Date | null
  next_attempt_at: Date
}

const LISTED = ['id', 'organisation', 'url', 'types', 'created_at', 'status', 'failures', 'failing_since', 'next_attempt_at'] as const

export interface NewSubscription {
  id: string
  organisation: string | null
  createdBy: string
  url: string
  types: string[]
  secret: string
}

/**
 * Stores a subscription positioned at now, unless its organisation already holds `max`;
 * undefined then.
 */
export async function insertSubscription (db: Db, s: NewSubscription, max: number): Promise<SubscriptionRow | undefined> {
  const { rows } = await sql<SubscriptionRow>`
    INSERT INTO webhook_subscriptions (id, organisation, created_by, url, types, secret, after_txid, after_seq)
    SELECT ${s.id}, ${s.organisation}, ${s.createdBy}::uuid, ${s.url}, ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(s.types)}::jsonb)), ${s.secret}, events_horizon(), 0
    WHERE (SELECT count(*) FROM webhook_subscriptions WHERE organisation IS NOT DISTINCT FROM ${s.organisation}) < ${max}
    RETURNING id, organisation, url, types, created_at, status, failures, failing_since, next_attempt_at`.execute(db)
  return rows[0]
}

/** Subscriptions, oldest first: one organisation's (undefined: all). */
export async function listSubscriptions (db: Db, organisation: string | undefined): Promise<SubscriptionRow[]> {
  let q = db.selectFrom('webhook_subscriptions').select([...LISTED])
  if (organisation !== undefined) q = q.where('organisation', '=', organisation)
  return q.orderBy('created_at').orderBy('id').execute()
}

export async function findSubscription (db: Db, id: string, organisation: string | undefined): Promise<SubscriptionRow | undefined> {
  let q = db.selectFrom('webhook_subscriptions').select([...LISTED]).where('id', '=', id)
  if (organisation !== undefined) q = q.where('organisation', '=', organisation)
  return q.executeTakeFirst()
}

export async function deleteSubscription (db: Db, id: string, organisation: string | undefined): Promise<boolean> {
  let q = db.deleteFrom('webhook_subscriptions').where('id', '=', id)
  if (organisation !== undefined) q = q.where('organisation', '=', organisation)
  const r = await q.executeTakeFirst()
  return r.numDeletedRows > 0n
}

export interface DeliveryRow {
  event_id: string
  attempted_at: Date
  status_code: number | null
  latency_ms: number
  error: string | null
}

export async function listDeliveries (db: Db, subscriptionId: string, limit: number): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').select(['event_id', 'attempted_at', 'status_code', 'latency_ms', 'error'])
    .where('subscription_id', '=', subscriptionId).orderBy('attempted_at', 'desc').limit(limit).execute()
}

// Delivery.

export interface Lease {
  id: string
  organisation: string | null
  url: string
  types: string[]
  secret: string
  after: Position
  status: SubscriptionStatus
  failures: number
  failing_since: Date | null
  token: string
}

/**
 * Takes up to `n` subscriptions that are due and have events after their position (of any type:
 * the holder moves the position past those it does not send, so this check never rescans them),
 * that no live lease holds:
 * FOR UPDATE SKIP LOCKED, so instances taking at once take different ones. The lease is a
 * timestamp, not a lock held during delivery: a transaction held open would hold back the
 * horizon of every reader of the feed.
 */
export async function leaseSubscriptions (db: Db, n: number, leaseMs: number): Promise<Lease[]> {
  const { rows } = await sql<Omit<Lease, 'after' | 'token'> & { after_txid: string, after_seq: string, lease_token: string }>`
    UPDATE webhook_subscriptions AS s SET lease_until = now() + ${leaseMs}::double precision * interval '1 millisecond', lease_token = gen_random_uuid()
    WHERE s.id IN (
      WITH h AS MATERIALIZED (SELECT events_horizon() AS xmin)
      SELECT c.id FROM webhook_subscriptions AS c
      WHERE c.next_attempt_at <= now() AND (c.lease_until IS NULL OR c.lease_until < now())
        AND EXISTS (
          SELECT 1 FROM events AS e
          WHERE (e.txid, e.seq) > (c.after_txid, c.after_seq) AND e.txid < (SELECT xmin FROM h)
            AND (c.organisation IS NULL OR e.organisation = c.organisation))
      ORDER BY c.next_attempt_at
      LIMIT ${n}
      FOR UPDATE SKIP LOCKED)
    RETURNING s.id, s.organisation, s.url, s.types, s.secret, s.after_txid::text AS after_txid, s.after_seq::text AS after_seq,
              s.status, s.failures, s.failing_since, s.lease_token::text AS lease_token`.execute(db)
  return rows.map(({ after_txid: txid, after_seq: seq, lease_token: token, ...r }) => ({ ...r, after: { txid, seq }, token }))
}

export interface Attempt { eventId: string, statusCode: number | null, latencyMs: number, error: string | null, at: Date }

/**
 * Records what a lease holder did: its attempts, the position reached, and the state after.
 * Written only while its lease token still holds; false when it was lost (taken over).
 */
export async function recordDeliveries (db: Db, lease: Lease, to: {
  after: Position
  attempts: Attempt[]
  failed: boolean
  retryInMs: number
  failing: boolean
}): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ id: string }>`
      UPDATE webhook_subscriptions SET
        after_txid = ${to.after.txid}::xid8, after_seq = ${to.after.seq}::bigint,
        failures = ${to.failed ? sql`failures + 1` : sql`0`},
        failing_since = ${to.failed ? sql`coalesce(failing_since, now())` : sql`NULL`},
        status = ${to.failing ? 'failing' : to.failed ? sql`status` : 'active'},
        next_attempt_at = now() + ${to.failed ? to.retryInMs : 0}::double precision * interval '1 millisecond',
        lease_until = NULL, lease_token = NULL
      WHERE id = ${lease.id} AND lease_token = ${lease.token}::uuid
      RETURNING id`.execute(trx)
    if (rows.length === 0) return false
    if (to.attempts.length > 0) {
      await trx.insertInto('webhook_deliveries').values(to.attempts.map((a) => ({
        subscription_id: lease.id, event_id: a.eventId, attempted_at: a.at, status_code: a.statusCode, latency_ms: a.latencyMs, error: a.error
      }))).execute()
    }
    return true
  })
}

/** Attempts older than a week go. */
export async function pruneDeliveries (db: Db): Promise<void> {
  await sql`DELETE FROM webhook_deliveries WHERE attempted_at < now() - interval '7 days'`.execute(db)
}
