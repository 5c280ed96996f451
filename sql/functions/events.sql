-- The events of sql/018_events.sql, written by statement-level triggers (one INSERT … SELECT per
-- statement, from its transition table) in the writing transaction:
--
--   sources                INSERT → source.created, UPDATE → source.updated, DELETE → source.deleted
--   source_conflict_pairs  INSERT → conflict.started, DELETE → conflict.ended (one event per row:
--                          each direction of a pair is its own source's organisation's event)
--
-- Each statement that writes events also notifies the channel source_registry_events (empty
-- payload; PostgreSQL sends one per transaction), which wakes the instances that LISTEN
-- (EVENTS_LISTEN_URL) at commit. A TRUNCATE of sources writes no events.

-- An instant as the API writes it: UTC, microseconds without trailing zeros (db/postgis.ts).
CREATE OR REPLACE FUNCTION events_utc(ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '\.?0+$', '') || 'Z';

COMMENT ON FUNCTION events_utc(timestamptz) IS 'An instant as the API and the events write it: ISO 8601 in UTC, Z.';

-- The feed's horizon: readers are served only events of transactions older than it. It is the
-- oldest transaction still running in this snapshot (pg_snapshot_xmin), except those that
-- pg_stat_activity shows connected to another database: they cannot write this database's
-- events, and a long one (an analyst's session on another database of the server) would
-- otherwise hold the feed back (every role sees datid and backend_xid of every session). A
-- transaction not known to be elsewhere counts: one that ended since the snapshot, or a prepared
-- one. In-progress transactions at or past the snapshot's xmax are not in its xip list and
-- need not be: their events are past the horizon whatever it is. A backend's transaction id
-- names its database for good, so a stale pg_stat_activity can only make the horizon lower.
CREATE OR REPLACE FUNCTION events_horizon() RETURNS xid8
LANGUAGE sql STABLE PARALLEL SAFE
RETURN coalesce(
  (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
   WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                     WHERE a.backend_xid = x::xid
                       AND a.datid <> (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database()))),
  pg_snapshot_xmax(pg_current_snapshot()));

COMMENT ON FUNCTION events_horizon() IS 'The feed serves events of transactions older than this: pg_snapshot_xmin(pg_current_snapshot()) without the running transactions of other databases.';
COMMENT ON TABLE events IS 'Change events (CloudEvents 1.0 data), written by triggers in the changing transaction: source.created/updated/deleted and conflict.started/ended. Served in (txid, seq) order, only below events_horizon().';

-- The data of the events, one definition each. SQL functions with one expression: the planner
-- inlines them into the triggers' statements (STABLE, as jsonb_build_object is).
CREATE OR REPLACE FUNCTION events_source_data(id text, feature_id text, period tstzrange, version integer, attributes jsonb) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
RETURN jsonb_build_object('id', id, 'feature_id', feature_id,
  'start_at', events_utc(lower(period)), 'end_at', events_utc(upper(period)), 'version', version, 'attributes', attributes);

CREATE OR REPLACE FUNCTION events_conflict_data(source_id text, other_id text, overlap_m2 double precision, overlap_ratio double precision, overlap_period tstzrange) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
RETURN jsonb_build_object('source_id', source_id, 'other_id', other_id, 'overlap_m2', overlap_m2, 'overlap_ratio', overlap_ratio,
  'start_at', events_utc(lower(overlap_period)), 'end_at', events_utc(upper(overlap_period)));

COMMENT ON FUNCTION events_source_data(text, text, tstzrange, integer, jsonb) IS 'The data of a source.* event: the source''s id, feature id, period, version and attributes.';
COMMENT ON FUNCTION events_conflict_data(text, text, double precision, double precision, tstzrange) IS 'The data of a conflict.* event: the two ids, overlap m², ratio and period.';

-- One function per trigger, each with static SQL: PL/pgSQL plans a static statement once per
-- session and keeps the plan, where EXECUTE of a formatted string is parsed and planned on every
-- write. A statement that wrote no rows (the conflict triggers' INSERT of no pairs) writes no
-- events and notifies nobody.
CREATE OR REPLACE FUNCTION events_sources_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'source.created', r.id, r.organisation, events_source_data(r.id, r.feature_id, r.period, r.version, r.attributes)
  FROM new_rows AS r;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events_sources_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'source.updated', r.id, r.organisation, events_source_data(r.id, r.feature_id, r.period, r.version, r.attributes)
  FROM new_rows AS r;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

-- The deleted row's version is the last it had; the deletion's own version (version + 1) is in
-- source_versions.
CREATE OR REPLACE FUNCTION events_sources_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'source.deleted', r.id, r.organisation, events_source_data(r.id, r.feature_id, r.period, r.version, r.attributes)
  FROM old_rows AS r;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

COMMENT ON FUNCTION events_sources_created() IS 'Trigger: one source.created event per inserted row of sources.';
COMMENT ON FUNCTION events_sources_updated() IS 'Trigger: one source.updated event per updated row of sources.';
COMMENT ON FUNCTION events_sources_deleted() IS 'Trigger: one source.deleted event per deleted row of sources.';

-- A conflict event's organisation is its source's owner. After a DELETE of sources the row is
-- gone by the time its pairs are removed: its owner is then read from its own latest event.
CREATE OR REPLACE FUNCTION events_conflicts_started() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'conflict.started', p.source_id,
    coalesce(
      (SELECT s.organisation FROM sources AS s WHERE s.id = p.source_id),
      (SELECT e.organisation FROM events AS e WHERE e.subject = p.source_id AND e.type LIKE 'source.%' ORDER BY e.txid DESC, e.seq DESC LIMIT 1)),
    events_conflict_data(p.source_id, p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period)
  FROM new_rows AS p;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events_conflicts_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'conflict.ended', p.source_id,
    coalesce(
      (SELECT s.organisation FROM sources AS s WHERE s.id = p.source_id),
      (SELECT e.organisation FROM events AS e WHERE e.subject = p.source_id AND e.type LIKE 'source.%' ORDER BY e.txid DESC, e.seq DESC LIMIT 1)),
    events_conflict_data(p.source_id, p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period)
  FROM old_rows AS p;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

COMMENT ON FUNCTION events_conflicts_started() IS 'Trigger: one conflict.started event per inserted row of source_conflict_pairs (each direction of a pair is an event of its own source).';
COMMENT ON FUNCTION events_conflicts_ended() IS 'Trigger: one conflict.ended event per deleted row of source_conflict_pairs.';

-- Named events_…, they fire before sources_conflicts_… (triggers of one event fire in name order):
-- a source.created comes before the conflict.started it causes.
CREATE OR REPLACE TRIGGER events_sources_insert AFTER INSERT ON sources REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_sources_created();
CREATE OR REPLACE TRIGGER events_sources_update AFTER UPDATE ON sources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_sources_updated();
CREATE OR REPLACE TRIGGER events_sources_delete AFTER DELETE ON sources REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_sources_deleted();
CREATE OR REPLACE TRIGGER events_conflict_pairs_insert AFTER INSERT ON source_conflict_pairs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_conflicts_started();
CREATE OR REPLACE TRIGGER events_conflict_pairs_delete AFTER DELETE ON source_conflict_pairs REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_conflicts_ended();

COMMENT ON TRIGGER events_sources_insert ON sources IS 'Writes source.created events.';
COMMENT ON TRIGGER events_sources_update ON sources IS 'Writes source.updated events.';
COMMENT ON TRIGGER events_sources_delete ON sources IS 'Writes source.deleted events.';
COMMENT ON TRIGGER events_conflict_pairs_insert ON source_conflict_pairs IS 'Writes conflict.started events.';
COMMENT ON TRIGGER events_conflict_pairs_delete ON source_conflict_pairs IS 'Writes conflict.ended events.';

-- Conflicts as a resource (sql/040_conflict_states.sql): each event goes to both parties, once
-- per party's source (subject), as conflict.started does: a stance changed, the conflict
-- resolved, a note added to its thread.
CREATE OR REPLACE FUNCTION events_conflict_state_data(c conflicts, seen_from text) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
RETURN jsonb_build_object('conflict_id', c.id, 'source_id', seen_from,
  'other_id', CASE WHEN seen_from = c.source_a THEN c.source_b ELSE c.source_a END,
  'state', c.state, 'version', c.version);

COMMENT ON FUNCTION events_conflict_state_data(conflicts, text) IS 'The common data of a conflict.stance_changed, conflict.resolved or conflict.note_added event, seen from one party''s source.';

CREATE OR REPLACE FUNCTION events_conflicts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  stances bigint;
  resolved bigint;
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'conflict.stance_changed', r.source_id, r.organisation,
    events_conflict_state_data(n, r.source_id) || jsonb_build_object('party_id', s.source_id, 'from', s.old_stance, 'to', s.new_stance, 'reason', s.reason)
  FROM new_rows AS n
  JOIN old_rows AS o ON o.id = n.id
  CROSS JOIN LATERAL (VALUES (n.source_a, o.stance_a, n.stance_a, n.reason_a), (n.source_b, o.stance_b, n.stance_b, n.reason_b)) AS s (source_id, old_stance, new_stance, reason)
  CROSS JOIN LATERAL (VALUES (n.source_a, n.organisation_a), (n.source_b, n.organisation_b)) AS r (source_id, organisation)
  WHERE s.new_stance <> s.old_stance;
  GET DIAGNOSTICS stances = ROW_COUNT;
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'conflict.resolved', r.source_id, r.organisation,
    events_conflict_state_data(n, r.source_id) || jsonb_build_object('resolution', n.resolution, 'resolved_at', events_utc(n.resolved_at))
  FROM new_rows AS n
  JOIN old_rows AS o ON o.id = n.id
  CROSS JOIN LATERAL (VALUES (n.source_a, n.organisation_a), (n.source_b, n.organisation_b)) AS r (source_id, organisation)
  WHERE o.resolved_at IS NULL AND n.resolved_at IS NOT NULL;
  GET DIAGNOSTICS resolved = ROW_COUNT;
  IF stances + resolved > 0 THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events_conflict_notes_added() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, subject, organisation, data)
  SELECT 'conflict.note_added', r.source_id, r.organisation,
    events_conflict_state_data(c, r.source_id) || jsonb_build_object('note_id', m.id, 'own', m.organisation = r.organisation, 'body', m.body)
  FROM new_rows AS m
  JOIN conflicts AS c ON c.id = m.conflict_id
  CROSS JOIN LATERAL (VALUES (c.source_a, c.organisation_a), (c.source_b, c.organisation_b)) AS r (source_id, organisation);
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END
$$;

COMMENT ON FUNCTION events_conflicts_changed() IS 'Trigger: conflict.stance_changed per changed stance and conflict.resolved per resolved conflict, to both parties.';
COMMENT ON FUNCTION events_conflict_notes_added() IS 'Trigger: conflict.note_added per note, to both parties.';

CREATE OR REPLACE TRIGGER events_conflicts_update AFTER UPDATE ON conflicts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_conflicts_changed();
CREATE OR REPLACE TRIGGER events_conflict_notes_insert AFTER INSERT ON conflict_notes REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_conflict_notes_added();

COMMENT ON TRIGGER events_conflicts_update ON conflicts IS 'Writes conflict.stance_changed and conflict.resolved events.';
COMMENT ON TRIGGER events_conflict_notes_insert ON conflict_notes IS 'Writes conflict.note_added events.';
