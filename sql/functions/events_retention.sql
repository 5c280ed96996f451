-- The event retention (issue 49): one small batch of expired events removed per call, in its own
-- short transaction (src/events/retention.ts calls it until a call removes less than a batch).
--
-- Removal goes in feed order from where the last batch stopped (events_retention, sql/033), so
-- the kept events are always a suffix of the feed and one position tells a reader whether it
-- missed any: a cursor before it is answered 410. A batch removes the leading events of the feed
-- that are all
--   * older than the retention (events.time, the writing transaction's start),
--   * below the horizon (their transactions ended and readers may have been served them; no event
--     can ever appear behind a removed one), and
--   * delivered to every active webhook subscription (at or before its position): a subscription
--     whose receiver is down keeps its events until it is marked failing (WEBHOOK_RETRY_FOR).
-- It stops at the first event that is not: an old event behind a newer one (a long transaction)
-- waits for it. The scan starts after the last removed position, on the primary key, so it never
-- walks the dead index entries of earlier batches. Inserts are not blocked: they take no lock a
-- DELETE of other rows holds. One session at a time: the others return at once (NULL).
CREATE OR REPLACE FUNCTION events_retention_lock_key() RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 7207196120150004901;

COMMENT ON FUNCTION events_retention_lock_key() IS 'The advisory lock a retention batch holds for its transaction: one session removes events at a time.';

CREATE OR REPLACE FUNCTION events_remove_expired(retention interval, batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  horizon xid8;
  from_txid xid8;
  from_seq bigint;
  floor_txid xid8;
  floor_seq bigint;
  n integer;
  last_txid xid8;
  last_seq bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(events_retention_lock_key()) THEN RETURN NULL; END IF;
  horizon := events_horizon();
  SELECT r.removed_txid, r.removed_seq INTO from_txid, from_seq FROM events_retention AS r;
  SELECT s.after_txid, s.after_seq INTO floor_txid, floor_seq FROM webhook_subscriptions AS s
  WHERE s.status = 'active' ORDER BY s.after_txid, s.after_seq LIMIT 1;

  WITH candidates AS (
    SELECT e.txid, e.seq, e.time FROM events AS e
    WHERE (e.txid, e.seq) > (from_txid, from_seq) AND e.txid < horizon
    ORDER BY e.txid, e.seq
    LIMIT batch
  ), head AS (
    SELECT c.txid, c.seq,
      bool_and(c.time < now() - retention AND (floor_txid IS NULL OR (c.txid, c.seq) <= (floor_txid, floor_seq)))
        OVER (ORDER BY c.txid, c.seq) AS expired
    FROM candidates AS c
  ), gone AS (
    DELETE FROM events AS e USING head AS l
    WHERE l.expired AND e.txid = l.txid AND e.seq = l.seq
    RETURNING e.txid, e.seq
  )
  SELECT count(*) OVER (), g.txid, g.seq INTO n, last_txid, last_seq
  FROM gone AS g ORDER BY g.txid DESC, g.seq DESC LIMIT 1;

  IF n IS NULL THEN RETURN 0; END IF;
  UPDATE events_retention SET removed_txid = last_txid, removed_seq = last_seq,
    removed_total = removed_total + n, removed_at = now();
  RETURN n;
END
$$;

COMMENT ON FUNCTION events_remove_expired(interval, integer) IS 'Removes up to batch of the leading events of the feed that are older than retention, below the horizon and delivered to every active webhook subscription; records the last removed position in events_retention. Returns how many (NULL: another session is removing).';
