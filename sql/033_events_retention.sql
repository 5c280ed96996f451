-- Event retention (issue 49, bounded growth): events older than EVENTS_RETENTION are removed in
-- the background, a small batch per transaction, from the start of the feed (src/events/retention.ts,
-- events_remove_expired in sql/functions/events_retention.sql). This one row says how far the
-- removal has come, so that a reader whose cursor lies before that point gets 410 with the oldest
-- cursor still served, never a silent gap.
CREATE TABLE events_retention (
  singleton     boolean     PRIMARY KEY DEFAULT true
    CONSTRAINT events_retention_one_row CHECK (singleton),
  removed_txid  xid8        NOT NULL DEFAULT '0',
  removed_seq   bigint      NOT NULL DEFAULT 0,
  removed_total bigint      NOT NULL DEFAULT 0,
  removed_at    timestamptz
);

INSERT INTO events_retention DEFAULT VALUES;

COMMENT ON TABLE events_retention IS 'One row: how far the retention (EVENTS_RETENTION) has removed the feed. Every event up to (removed_txid, removed_seq) in feed order is gone, every later one is kept; a cursor before it is answered 410.';
COMMENT ON COLUMN events_retention.singleton IS 'Always true: the table holds one row.';
COMMENT ON COLUMN events_retention.removed_txid IS 'The last removed event''s position (txid; 0 when none was removed): the oldest cursor still served.';
COMMENT ON COLUMN events_retention.removed_seq IS 'See removed_txid.';
COMMENT ON COLUMN events_retention.removed_total IS 'Events removed by the retention since the table was made.';
COMMENT ON COLUMN events_retention.removed_at IS 'When the last batch removed something.';
