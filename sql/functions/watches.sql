-- Watched areas (issue 47, point 5; the table: sql/061_watches.sql). After the numbered files.
--
-- 1. The overlap of a source and a watch   watches_overlap_m2
-- 2. A watch's filter on a source          watches_filter_matches
-- 3. The events                            events_watches_matched, triggers sources_watches_insert, _update
--
-- A source starts to overlap a watch when it is created overlapping it (area of positive size,
-- periods overlapping), or updated so that it overlaps it where its previous version did not. The
-- watching organisation then gets one watch.matched event (subject: the source) with the source's
-- id, the area of the overlap in m² (lonlat_area_m2, as area_m2) and the overlapping period: no
-- geometry, no attributes.

-- 1. The area in m² of the intersection of two areas, NULL when they do not overlap (touching is not overlapping).
CREATE OR REPLACE FUNCTION watches_overlap_m2(a geometry, b geometry) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE
AS $$
DECLARE
  area double precision;
BEGIN
  IF NOT ST_Intersects(a, b) THEN RETURN NULL; END IF;
  area := lonlat_area_m2(lonlat_polygonal_overlay(a, b));
  RETURN CASE WHEN area > 0 THEN area END;
END;
$$;

COMMENT ON FUNCTION watches_overlap_m2(geometry, geometry) IS
  'The area in m² (lonlat_area_m2) of the overlap of two areas, NULL when they do not overlap: what watch.matched reports.';

-- 2. A watch's filter (its filter_sql, a condition on the row `sources`) on one source.
CREATE OR REPLACE FUNCTION watches_filter_matches(filter_sql text, source_id text) RETURNS boolean
  LANGUAGE plpgsql STABLE PARALLEL UNSAFE
AS $$
DECLARE
  matched boolean;
BEGIN
  IF filter_sql IS NULL THEN RETURN true; END IF;
  EXECUTE 'SELECT EXISTS (SELECT 1 FROM sources WHERE sources.id = $1 AND (' || filter_sql || '))' INTO matched USING source_id;
  RETURN matched;
END;
$$;

COMMENT ON FUNCTION watches_filter_matches(text, text) IS
  'Whether the source with this id matches a watch''s filter (watches.filter_sql; NULL matches every source).';

-- 3. One statement at a time. Named sources_watches_…, the triggers fire after the conflicts'
--    (sources_conflicts_…, sources_resolution_…), so a filter on conflict or conflict_state sees
--    the source's conflicts as this write left them.
CREATE OR REPLACE FUNCTION events_watches_matched() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO events (type, subject, organisation, data)
    SELECT 'watch.matched', n.id, w.organisation,
      jsonb_build_object('watch_id', w.id, 'source_id', n.id, 'overlap_m2', m.overlap_m2,
        'start_at', events_utc(lower(n.period * w.period)), 'end_at', events_utc(upper(n.period * w.period)))
    FROM new_rows AS n
    JOIN watches AS w ON w.geom && n.geom AND w.period && n.period
    CROSS JOIN LATERAL (SELECT watches_overlap_m2(n.geom, w.geom) AS overlap_m2 OFFSET 0) AS m
    WHERE m.overlap_m2 IS NOT NULL AND watches_filter_matches(w.filter_sql, n.id)
    ORDER BY n.id, w.id;
  ELSE
    INSERT INTO events (type, subject, organisation, data)
    SELECT 'watch.matched', n.id, w.organisation,
      jsonb_build_object('watch_id', w.id, 'source_id', n.id, 'overlap_m2', m.overlap_m2,
        'start_at', events_utc(lower(n.period * w.period)), 'end_at', events_utc(upper(n.period * w.period)))
    FROM new_rows AS n
    JOIN old_rows AS o ON o.id = n.id
    JOIN watches AS w ON w.geom && n.geom AND w.period && n.period
    CROSS JOIN LATERAL (SELECT watches_overlap_m2(n.geom, w.geom) AS overlap_m2 OFFSET 0) AS m
    WHERE m.overlap_m2 IS NOT NULL
      AND NOT (o.geom && w.geom AND o.period && w.period AND watches_overlap_m2(o.geom, w.geom) IS NOT NULL)
      AND watches_filter_matches(w.filter_sql, n.id)
    ORDER BY n.id, w.id;
  END IF;
  IF FOUND THEN PERFORM pg_notify('source_registry_events', ''); END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION events_watches_matched() IS
  'Trigger: one watch.matched event to the watching organisation per watch a written source starts to overlap (area and period, and the watch''s filter).';

CREATE OR REPLACE TRIGGER sources_watches_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION events_watches_matched();
CREATE OR REPLACE TRIGGER sources_watches_update AFTER UPDATE ON sources
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION events_watches_matched();

COMMENT ON TRIGGER sources_watches_insert ON sources IS 'Writes watch.matched events for the watches inserted sources overlap.';
COMMENT ON TRIGGER sources_watches_update ON sources IS 'Writes watch.matched events for the watches updated sources start to overlap.';
