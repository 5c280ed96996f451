-- Conflicts as a resource: the rows of conflicts (sql/040_conflict_states.sql) kept in step with
-- the pairs of source_conflict_pairs, and the rules of stances. After the numbered files (it
-- reads their tables).
--
-- 1. The pairs into conflicts   conflicts_sync: new pairs start, changed ones follow, gone ones resolve
-- 2. The triggers on sources    sources_resolution_insert, _update, _delete
-- 3. Stances                    conflicts_stance_check (BEFORE UPDATE: the transitions, the version)
-- 4. Their history              conflicts_stances_record (conflict_stances)
--
-- The events (conflict.stance_changed, conflict.resolved, conflict.note_added) are events.sql's.

-- 1. Every conflict of these sources brought in line with source_conflict_pairs, as it is at the
--    end of the statement that changed them: an unresolved conflict whose pair is gone is resolved
--    (`how`, or the transaction's setting source_registry.resolution: a carve-out says 'carved'),
--    a pair without an unresolved conflict starts one (open; acknowledged by the organisation the
--    setting source_registry.acknowledged_by names: a write made knowingly), and one whose overlap
--    changed takes the new overlap as a new version.
CREATE OR REPLACE FUNCTION conflicts_sync(ids text[], how text) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  knowingly text := nullif(current_setting('source_registry.acknowledged_by', true), '');
BEGIN
  IF how IS NOT NULL THEN
    UPDATE conflicts AS c
    SET resolved_at = now(), resolution = coalesce(nullif(current_setting('source_registry.resolution', true), ''), how),
      resolved_by = sources_recorded_by(NULL)
    WHERE c.resolved_at IS NULL AND (c.source_a = ANY (ids) OR c.source_b = ANY (ids))
      AND NOT EXISTS (SELECT 1 FROM source_conflict_pairs AS p WHERE p.source_id = c.source_a AND p.other_id = c.source_b);
  END IF;
  INSERT INTO conflicts AS c (source_a, source_b, organisation_a, organisation_b, overlap_m2, overlap_ratio_a, overlap_ratio_b, overlap_period, stance_a, stance_b)
  SELECT p.source_id, p.other_id, sa.organisation, sb.organisation, p.overlap_m2, p.overlap_ratio, q.overlap_ratio, p.overlap_period,
    CASE WHEN sa.organisation = knowingly AND sa.id = ANY (ids) THEN 'acknowledged' ELSE 'open' END,
    CASE WHEN sb.organisation = knowingly AND sb.id = ANY (ids) THEN 'acknowledged' ELSE 'open' END
  FROM (SELECT DISTINCT least(r.source_id, r.other_id) AS a, greatest(r.source_id, r.other_id) AS b
        FROM source_conflict_pairs AS r WHERE r.source_id = ANY (ids)) AS k
  JOIN source_conflict_pairs AS p ON p.source_id = k.a AND p.other_id = k.b
  JOIN source_conflict_pairs AS q ON q.source_id = k.b AND q.other_id = k.a
  JOIN sources AS sa ON sa.id = k.a
  JOIN sources AS sb ON sb.id = k.b
  ON CONFLICT (source_a, source_b) WHERE resolved_at IS NULL DO UPDATE
  SET overlap_m2 = excluded.overlap_m2, overlap_ratio_a = excluded.overlap_ratio_a, overlap_ratio_b = excluded.overlap_ratio_b,
    overlap_period = excluded.overlap_period
  WHERE (c.overlap_m2, c.overlap_ratio_a, c.overlap_ratio_b, c.overlap_period)
    IS DISTINCT FROM (excluded.overlap_m2, excluded.overlap_ratio_a, excluded.overlap_ratio_b, excluded.overlap_period);
END;
$$;

COMMENT ON FUNCTION conflicts_sync(text[], text) IS
  'Brings the conflicts of these sources in line with source_conflict_pairs: new pairs start, changed overlaps are a new version, pairs gone are resolved (how: edited or deleted; a NULL how resolves none).';

-- 2. After the conflict triggers of conflict_rule.sql (sources_conflicts_…: triggers of one event
--    fire in name order, and sources_resolution_… comes after), so the pairs are final.
CREATE OR REPLACE FUNCTION sources_resolution_after_insert() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM conflicts_sync(ARRAY(SELECT n.id FROM new_rows AS n), NULL);
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_resolution_after_update() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM conflicts_sync(ARRAY(SELECT n.id FROM new_rows AS n), 'edited');
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_resolution_after_delete() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM conflicts_sync(ARRAY(SELECT o.id FROM old_rows AS o), 'deleted');
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER sources_resolution_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_resolution_after_insert();
CREATE OR REPLACE TRIGGER sources_resolution_update AFTER UPDATE ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_resolution_after_update();
CREATE OR REPLACE TRIGGER sources_resolution_delete AFTER DELETE ON sources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_resolution_after_delete();

COMMENT ON TRIGGER sources_resolution_insert ON sources IS 'Starts the conflicts of inserted sources (conflicts).';
COMMENT ON TRIGGER sources_resolution_update ON sources IS 'Starts, changes and resolves (edited) the conflicts of updated sources.';
COMMENT ON TRIGGER sources_resolution_delete ON sources IS 'Resolves (deleted) the conflicts of deleted sources.';

-- 3. A stance changes only as conflict_stance_transitions allows, and only while the conflict is
--    unresolved; every change of a stance, a reason or the overlap is a new version. The refusal
--    is a check_violation naming conflict_stance_transition, so an analyst's UPDATE gets the rule
--    the API applies (the service's UPDATE checks the same table in its WHERE, and reads the
--    allowed stances only after a refusal, to name them in its 409).
CREATE OR REPLACE FUNCTION conflicts_stance_check() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  IF (NEW.stance_a, NEW.stance_b) IS DISTINCT FROM (OLD.stance_a, OLD.stance_b) THEN
    IF OLD.resolved_at IS NOT NULL THEN
      RAISE EXCEPTION 'conflict % is resolved: its stances no longer change', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'conflict_stance_transition';
    END IF;
    IF NEW.stance_a <> OLD.stance_a AND NOT EXISTS (SELECT 1 FROM conflict_stance_transitions AS t WHERE t.from_stance = OLD.stance_a AND t.to_stance = NEW.stance_a)
       OR NEW.stance_b <> OLD.stance_b AND NOT EXISTS (SELECT 1 FROM conflict_stance_transitions AS t WHERE t.from_stance = OLD.stance_b AND t.to_stance = NEW.stance_b) THEN
      RAISE EXCEPTION 'conflict %: a stance may not change from % to %', OLD.id,
        CASE WHEN NEW.stance_a <> OLD.stance_a THEN OLD.stance_a ELSE OLD.stance_b END,
        CASE WHEN NEW.stance_a <> OLD.stance_a THEN NEW.stance_a ELSE NEW.stance_b END
        USING ERRCODE = 'check_violation', CONSTRAINT = 'conflict_stance_transition';
    END IF;
  END IF;
  IF (NEW.stance_a, NEW.stance_b, NEW.reason_a, NEW.reason_b, NEW.overlap_m2, NEW.overlap_period, NEW.resolved_at)
     IS DISTINCT FROM (OLD.stance_a, OLD.stance_b, OLD.reason_a, OLD.reason_b, OLD.overlap_m2, OLD.overlap_period, OLD.resolved_at) THEN
    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
  END IF;
  RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER conflicts_stance_check BEFORE UPDATE ON conflicts
  FOR EACH ROW EXECUTE FUNCTION conflicts_stance_check();

COMMENT ON TRIGGER conflicts_stance_check ON conflicts IS 'Refuses stance changes conflict_stance_transitions does not list (or on a resolved conflict); makes every change a new version.';

-- 4. The history of stances, one statement at a time: each side whose stance or reason changed,
--    and on insert each side that did not start open.
CREATE OR REPLACE FUNCTION conflicts_stances_record() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO conflict_stances (conflict_id, source_id, organisation, from_stance, to_stance, reason, version, recorded_by)
    SELECT n.id, s.source_id, s.organisation, NULL, s.stance, NULL, n.version, sources_recorded_by(NULL)
    FROM new_rows AS n
    CROSS JOIN LATERAL (VALUES (n.source_a, n.organisation_a, n.stance_a), (n.source_b, n.organisation_b, n.stance_b)) AS s (source_id, organisation, stance)
    WHERE s.stance <> 'open';
  ELSE
    INSERT INTO conflict_stances (conflict_id, source_id, organisation, from_stance, to_stance, reason, version, recorded_by)
    SELECT n.id, s.source_id, s.organisation, s.old_stance, s.new_stance, s.reason, n.version, sources_recorded_by(NULL)
    FROM new_rows AS n
    JOIN old_rows AS o ON o.id = n.id
    CROSS JOIN LATERAL (VALUES
      (n.source_a, n.organisation_a, o.stance_a, n.stance_a, n.reason_a, o.reason_a),
      (n.source_b, n.organisation_b, o.stance_b, n.stance_b, n.reason_b, o.reason_b)) AS s (source_id, organisation, old_stance, new_stance, reason, old_reason)
    WHERE (s.new_stance, s.reason) IS DISTINCT FROM (s.old_stance, s.old_reason);
  END IF;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER conflicts_stances_insert AFTER INSERT ON conflicts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conflicts_stances_record();
CREATE OR REPLACE TRIGGER conflicts_stances_update AFTER UPDATE ON conflicts
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conflicts_stances_record();

COMMENT ON TRIGGER conflicts_stances_insert ON conflicts IS 'Records the stances a conflict started with, other than open, in conflict_stances.';
COMMENT ON TRIGGER conflicts_stances_update ON conflicts IS 'Records every change of a stance or its reason in conflict_stances.';

-- 5. Carve-outs: an area without the parts other areas cover (cut, their union), as a valid
--    Polygon or MultiPolygon. Parts in which no disk of the tolerance fits (slivers along the cut)
--    are dropped, as the conflict rule would ignore them; NULL when nothing remains. GEOS's overlay
--    on a 1e-12° grid when it gives up, as lonlat_polygonal_overlay. PARALLEL UNSAFE for the same
--    reason as that one (its EXCEPTION block).
CREATE OR REPLACE FUNCTION sources_carve(geom geometry, cut geometry, tolerance_m double precision) RETURNS geometry
  LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE
AS $$
DECLARE
  d geometry;
  kept geometry;
BEGIN
  IF cut IS NULL THEN RETURN geom; END IF;
  BEGIN
    d := ST_CollectionExtract(ST_Difference(geom, cut), 3);
  EXCEPTION WHEN OTHERS THEN
    d := ST_CollectionExtract(ST_Difference(geom, cut, 1e-12), 3);
  END;
  SELECT ST_Collect(p.geom ORDER BY p.path) INTO kept
  FROM ST_Dump(d) AS p WHERE lonlat_fits_disk(p.geom, tolerance_m);
  IF kept IS NULL THEN RETURN NULL; END IF;
  IF ST_NumGeometries(kept) = 1 THEN RETURN ST_SetSRID(ST_GeometryN(kept, 1), ST_SRID(geom)); END IF;
  RETURN ST_SetSRID(kept, ST_SRID(geom));
END;
$$;

COMMENT ON FUNCTION sources_carve(geometry, geometry, double precision) IS
  'geom without cut, as a Polygon or MultiPolygon, parts in which no disk of tolerance_m metres fits dropped; NULL when nothing remains. What POST /sources/carve stores.';

--    The union of the other sources of a source's unresolved conflicts (those with these ids, or
--    all when ids is NULL): what a carve-out takes away.
CREATE OR REPLACE FUNCTION sources_carve_cut(source_id text, ids text[]) RETURNS geometry
  LANGUAGE sql STABLE
AS $$
  SELECT ST_Union(o.geom)
  FROM conflicts AS c
  JOIN sources AS o ON o.id = CASE WHEN c.source_a = source_id THEN c.source_b ELSE c.source_a END
  WHERE (c.source_a = source_id OR c.source_b = source_id) AND c.resolved_at IS NULL AND (ids IS NULL OR c.id = ANY (ids))
$$;

COMMENT ON FUNCTION sources_carve_cut(text, text[]) IS
  'The union of the areas of the other parties of a source''s unresolved conflicts (these ids, or all for NULL): what a carve-out removes.';
