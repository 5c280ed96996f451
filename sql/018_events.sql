-- Events (issue 35): the transactional outbox every change to sources and to the conflict pairs
-- writes to, in the writing transaction (the triggers of sql/functions/events.sql), so writes made
-- with plain SQL emit them as API writes do. GET /events, the SSE stream and the webhooks all read
-- this one table.
--
-- Order and the feed: an event is placed by its transaction's id (txid, an xid8) and then by seq.
-- A reader is served only events whose transaction is older than the oldest transaction still
-- running (pg_snapshot_xmin of its snapshot): such transactions have all ended, so no event can
-- ever appear before a position a reader has passed. A transaction that began earlier and commits
-- late holds the feed back until it ends, instead of being skipped.
CREATE TABLE events (
  txid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
  seq          bigint      GENERATED ALWAYS AS IDENTITY,
  type         text        NOT NULL
    CONSTRAINT events_type_known CHECK (type IN ('source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended')),
  subject      text        NOT NULL,
  organisation text,
  time         timestamptz NOT NULL DEFAULT now(),
  data         jsonb       NOT NULL,
  CONSTRAINT events_pkey PRIMARY KEY (txid, seq)
);

-- One organisation's events in feed order.
CREATE INDEX events_organisation_position_idx ON events (organisation, txid, seq);
-- The owner of a source that is gone (conflict.ended after its delete), and a source's history.
CREATE INDEX events_subject_idx ON events (subject);

COMMENT ON TABLE events IS 'Change events (CloudEvents 1.0 data), written by triggers in the changing transaction: source.created/updated/deleted and conflict.started/ended. Served in (txid, seq) order, only below pg_snapshot_xmin(pg_current_snapshot()).';
COMMENT ON COLUMN events.txid IS 'The writing transaction (pg_current_xact_id()): the first key of the feed order.';
COMMENT ON COLUMN events.seq IS 'Order within a transaction, and the CloudEvent id (evt_<seq>).';
COMMENT ON COLUMN events.type IS 'The CloudEvent type.';
COMMENT ON COLUMN events.subject IS 'The source the event is about (for conflicts: the source seen from).';
COMMENT ON COLUMN events.organisation IS 'The organisation that sees the event: the owner of subject. NULL only for a source that predates the events table and is gone: admins alone see those.';
COMMENT ON COLUMN events.time IS 'When the writing transaction began (now()).';
COMMENT ON COLUMN events.data IS 'The CloudEvent data: for sources their id, feature_id, start_at, end_at and version; for conflicts both ids, the overlap in m², its ratio and period.';

-- Webhook subscriptions (POST /subscriptions). Each keeps its own position in the feed: the
-- deliverer of whichever instance leases it posts the next events after that position, in order,
-- and moves the position on after each 2xx.
CREATE TABLE webhook_subscriptions (
  id              text        PRIMARY KEY
    CONSTRAINT webhook_subscriptions_id_format CHECK (id ~ '^sub_[0-9A-Za-z]{22}$'),
  organisation    text,
  created_by      uuid        NOT NULL REFERENCES accounts (id),
  url             text        NOT NULL
    CONSTRAINT webhook_subscriptions_url_format CHECK (url ~ '^https?://' AND char_length(url) <= 2048),
  types           text[]      NOT NULL
    CONSTRAINT webhook_subscriptions_types_known CHECK (cardinality(types) > 0 AND types <@ ARRAY['source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended']),
  secret          text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  after_txid      xid8        NOT NULL,
  after_seq       bigint      NOT NULL,
  status          text        NOT NULL DEFAULT 'active'
    CONSTRAINT webhook_subscriptions_status_known CHECK (status IN ('active', 'failing')),
  failures        integer     NOT NULL DEFAULT 0,
  failing_since   timestamptz,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_until     timestamptz,
  lease_token     uuid
);

CREATE INDEX webhook_subscriptions_organisation_idx ON webhook_subscriptions (organisation, created_at);

COMMENT ON TABLE webhook_subscriptions IS 'Webhook subscriptions: where to POST which events, signed (Standard Webhooks) with secret; each with its position in the feed.';
COMMENT ON COLUMN webhook_subscriptions.id IS '"sub_" and 22 base62 characters.';
COMMENT ON COLUMN webhook_subscriptions.organisation IS 'Whose events are sent; NULL: every organisation''s (made by an admin).';
COMMENT ON COLUMN webhook_subscriptions.created_by IS 'The account that made it.';
COMMENT ON COLUMN webhook_subscriptions.url IS 'Where events are POSTed: https (http only with WEBHOOK_ALLOW_PRIVATE).';
COMMENT ON COLUMN webhook_subscriptions.types IS 'The event types sent.';
COMMENT ON COLUMN webhook_subscriptions.secret IS 'The Standard Webhooks signing secret (whsec_…), shown once at creation; kept in clear because signing needs it.';
COMMENT ON COLUMN webhook_subscriptions.created_at IS 'When it was made.';
COMMENT ON COLUMN webhook_subscriptions.after_txid IS 'Position in the feed: every event up to (after_txid, after_seq) has been delivered.';
COMMENT ON COLUMN webhook_subscriptions.after_seq IS 'See after_txid.';
COMMENT ON COLUMN webhook_subscriptions.status IS 'active, or failing: deliveries have failed for longer than WEBHOOK_RETRY_FOR (still retried, at the longest interval).';
COMMENT ON COLUMN webhook_subscriptions.failures IS 'Failed attempts in a row; sets the next backoff.';
COMMENT ON COLUMN webhook_subscriptions.failing_since IS 'The first failure of the current run of failures.';
COMMENT ON COLUMN webhook_subscriptions.next_attempt_at IS 'No delivery before this (the backoff).';
COMMENT ON COLUMN webhook_subscriptions.lease_until IS 'An instance delivers this subscription until then (taken with FOR UPDATE SKIP LOCKED); a killed instance''s lease runs out.';
COMMENT ON COLUMN webhook_subscriptions.lease_token IS 'The holder''s token: only it may move the position while the lease holds.';

CREATE TABLE webhook_deliveries (
  subscription_id text        NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
  event_id        text        NOT NULL,
  attempted_at    timestamptz NOT NULL DEFAULT now(),
  status_code     integer,
  latency_ms      double precision NOT NULL,
  error           text
);

CREATE INDEX webhook_deliveries_subscription_idx ON webhook_deliveries (subscription_id, attempted_at DESC);

COMMENT ON TABLE webhook_deliveries IS 'Recent delivery attempts (GET /subscriptions/deliveries?id=); kept for a week.';
COMMENT ON COLUMN webhook_deliveries.subscription_id IS 'The subscription.';
COMMENT ON COLUMN webhook_deliveries.event_id IS 'The CloudEvent id (also the webhook-id header).';
COMMENT ON COLUMN webhook_deliveries.attempted_at IS 'When the POST was sent.';
COMMENT ON COLUMN webhook_deliveries.status_code IS 'The receiver''s HTTP status; NULL when there was none (timeout, refused address, network error).';
COMMENT ON COLUMN webhook_deliveries.latency_ms IS 'From sending to the answer (or the failure).';
COMMENT ON COLUMN webhook_deliveries.error IS 'Why the attempt failed, when it did.';
