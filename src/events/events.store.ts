// The one door from the event routes, the hub and the deliverer to the events' storage.
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import type { Position } from './cursor.js'
import {
  type Attempt, type DeliveryRow, type FeedHead, type FeedPage, type FeedQuery, type Lease, type NewSubscription, type PositionState, type SubscriptionRow,
  currentPosition, deleteSubscription, findSubscription, insertSubscription, leaseSubscriptions, listDeliveries, listSubscriptions,
  positionState, pruneDeliveries, readFeed, readHead, recordDeliveries, removeExpiredEvents, vacuumEvents
} from './events.repository.js'

export interface EventStore {
  feed: (q: FeedQuery) => Promise<FeedPage>
  positionState: (p: Position) => Promise<PositionState>
  currentPosition: () => Promise<Position>
  head: () => Promise<FeedHead>
  createSubscription: (s: NewSubscription, max: number) => Promise<SubscriptionRow | undefined>
  /** One organisation's (undefined: all). */
  listSubscriptions: (organisation: string | undefined) => Promise<SubscriptionRow[]>
  findSubscription: (id: string, organisation: string | undefined) => Promise<SubscriptionRow | undefined>
  deleteSubscription: (id: string, organisation: string | undefined) => Promise<boolean>
  deliveries: (subscriptionId: string, limit: number) => Promise<DeliveryRow[]>
  lease: (n: number, leaseMs: number) => Promise<Lease[]>
  record: (lease: Lease, to: { after: Position, attempts: Attempt[], failed: boolean, retryInMs: number, failing: boolean }) => Promise<boolean>
  prune: () => Promise<void>
  /** One retention batch: how many events it removed (undefined: another session is removing). */
  removeExpired: (retentionMs: number, batch: number) => Promise<number | undefined>
  /** VACUUM (ANALYZE) events: where no autovacuum runs. */
  vacuum: () => Promise<void>
}

export function eventStore (db: Kysely<Database>): EventStore {
  return {
    feed: (q) => readFeed(db, q),
    positionState: (p) => positionState(db, p),
    currentPosition: () => currentPosition(db),
    head: () => readHead(db),
    createSubscription: (s, max) => insertSubscription(db, s, max),
    listSubscriptions: (organisation) => listSubscriptions(db, organisation),
    findSubscription: (id, organisation) => findSubscription(db, id, organisation),
    deleteSubscription: (id, organisation) => deleteSubscription(db, id, organisation),
    deliveries: (id, limit) => listDeliveries(db, id, limit),
    lease: (n, leaseMs) => leaseSubscriptions(db, n, leaseMs),
    record: (lease, to) => recordDeliveries(db, lease, to),
    prune: () => pruneDeliveries(db),
    removeExpired: (retentionMs, batch) => removeExpiredEvents(db, retentionMs, batch),
    vacuum: () => vacuumEvents(db)
  }
}
