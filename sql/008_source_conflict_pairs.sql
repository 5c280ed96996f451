-- Conflicts, computed once at write time. The view of sql/007 decided the rule at every read:
-- about 0.85 ms per candidate (bench/NOTES.md), far too slow for GET /sources/?id= and listings.
-- Here every conflicting pair is stored in source_conflict_pairs, both directions, kept by
-- triggers on sources, so a row inserted, updated or deleted with plain SQL is held to the same
-- rule as one written through the API; source_conflicts now reads that table.
--
-- Writes in parallel: a new source must see every source committed before it, and the pair of
-- two sources inserted at the same moment must be found by one of them. So conflict detection
-- takes transaction-level advisory locks on the 1° cells its areas touch (areas over more than
-- 64 cells take one lock on everything) and only then looks for partners, in a new snapshot:
-- writes in different places go on in parallel, writes in the same place one after the other.
-- A partner being deleted at that moment is waited for (FOR KEY SHARE) and skipped once gone.

-- 1. Area: a fast path for small polygons, which are most sources and nearly every overlap.
--    The area is the integral of f(lat) = M·N·cos(lat) over the polygon in (lon, lat) radians.
--    With f taken linear about the polygon's centroid latitude the integral is f(centroid)·area:
--    the first-order term vanishes at the centroid, and the rest is at most span²/8 of the area
--    (span in radians): under 1e-9 for a span of 0.005° of latitude. Measured against the
--    Green's-theorem integral of sql/004: within 2.5e-10 for 0.001° boxes (and more precise
--    than it below 1e-5°, where its zone areas cancel), 25 times faster.
CREATE FUNCTION wgs84_area_density(lat double precision) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  -- a²(1-e²)·cos φ / (1 - e² sin² φ)²: d/dφ of wgs84_zone_area.
  RETURN 6378137.0 ^ 2 * (1 - 0.0066943799901413165) * cos(lat) / (1 - 0.0066943799901413165 * sin(lat) ^ 2) ^ 2;

COMMENT ON FUNCTION wgs84_area_density(double precision) IS
  'Area in m² on the WGS 84 ellipsoid per square radian of longitude and latitude at latitude lat (radians).';

ALTER FUNCTION lonlat_area_m2(geometry) RENAME TO lonlat_area_m2_green;

COMMENT ON FUNCTION lonlat_area_m2_green(geometry) IS
  'lonlat_area_m2 for any polygon: the authalic zone area integrated along each edge (Green''s theorem).';

CREATE FUNCTION lonlat_multi_area_m2_green(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (SELECT coalesce(sum(lonlat_area_m2_green(d.geom)), 0) FROM ST_Dump(ST_CollectionExtract(g, 3)) AS d);

COMMENT ON FUNCTION lonlat_multi_area_m2_green(geometry) IS
  'lonlat_area_m2_green summed over the polygons of any geometry.';

-- Any polygonal geometry (Polygon or MultiPolygon); lines and points have no area. One
-- expression without a subquery, and not STRICT (a CASE is not), so the planner inlines it
-- where it is called: a call of a non-inlined SQL function costs 20 µs. NULL gives NULL.
CREATE FUNCTION lonlat_area_m2(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE
    WHEN ST_IsEmpty(g) THEN 0
    WHEN ST_YMax(g) - ST_YMin(g) <= 0.005 AND ST_YMin(g) >= -89.9 AND ST_YMax(g) <= 89.9
      THEN (pi() / 180) ^ 2 * ST_Area(g) * wgs84_area_density(radians(ST_Y(ST_Centroid(g))))
    WHEN GeometryType(g) = 'POLYGON' THEN lonlat_area_m2_green(g)
    ELSE lonlat_multi_area_m2_green(g)
  END;

COMMENT ON FUNCTION lonlat_area_m2(geometry) IS
  'Area in m² on the WGS 84 ellipsoid of a lon/lat (EPSG:4326) polygon whose edges are straight in longitude/latitude, as RFC 7946 defines GeoJSON edges. Use it instead of ST_Area(geom::geography), which reads edges as great-circle arcs.';

-- The generated column is bound to the function it was created with (now lonlat_area_m2_green),
-- so it is made again with the new one: one rewrite of the table, areas equal within 1e-9. The
-- view of sql/007 reads it; it is made again below, on the pairs.
DROP VIEW source_conflicts;
ALTER TABLE sources DROP COLUMN area_m2;
ALTER TABLE sources ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (lonlat_area_m2(geom)) STORED;

COMMENT ON COLUMN sources.area_m2 IS 'Area in m² on the WGS 84 ellipsoid, edges straight in longitude/latitude (RFC 7946): lonlat_area_m2(geom).';

CREATE OR REPLACE FUNCTION lonlat_polygonal_area_m2(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lonlat_area_m2(ST_CollectionExtract(g, 3));

-- 2. The test, with the area already known. Cheapest first; only the undecided middle pays for
--    a buffer. The buffer is planar, in metres about the centroid (M and N of the ellipsoid
--    there), so it cannot fail the way a geography buffer can on wide or polar areas.
CREATE FUNCTION lonlat_fits_disk(g geometry, area_m2 double precision, tolerance_m double precision) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  box box2d;
  lat double precision;
  w double precision;
  p geometry;
BEGIN
  IF area_m2 <= 0 THEN RETURN false; END IF;
  IF tolerance_m <= 0 THEN RETURN true; END IF;
  box := g::box2d;
  -- A degree of latitude is at most 111,700 m; a degree of longitude at most 111,321 m times the
  -- cosine of the latitude nearest the equator (0 when the box spans it).
  IF (ST_YMax(box) - ST_YMin(box)) * 111700 <= 2 * tolerance_m
     OR (ST_XMax(box) - ST_XMin(box)) * 111321
        * cos(radians(CASE WHEN ST_YMin(box) <= 0 AND ST_YMax(box) >= 0 THEN 0 ELSE least(abs(ST_YMin(box)), abs(ST_YMax(box))) END))
        <= 2 * tolerance_m THEN
    RETURN false;
  END IF;
  -- If no disk fitted, every point would lie within t of the boundary: a band of at most
  -- perimeter·t plus (π/2)·t² per vertex. The perimeter is bounded from above in the plane
  -- scaled to the largest length of a degree in the box (111,700 m of latitude; 111,321 m of
  -- longitude times the cosine of the latitude nearest the equator): no geodesic is involved,
  -- so an edge of 180° of longitude is no failure.
  IF area_m2 > ST_Perimeter(ST_Scale(g, 111321 * cos(radians(CASE WHEN ST_YMin(box) <= 0 AND ST_YMax(box) >= 0 THEN 0 ELSE least(abs(ST_YMin(box)), abs(ST_YMax(box))) END)), 111700))
       * tolerance_m + ST_NPoints(g) * pi() / 2 * tolerance_m ^ 2 THEN
    RETURN true;
  END IF;
  p := ST_CollectionExtract(g, 3);
  lat := radians(ST_Y(ST_Centroid(p)));
  w := 1 - 0.0066943799901413165 * sin(lat) ^ 2;
  -- Metres per degree: N·cos φ east-west, M north-south.
  p := ST_Scale(ST_Translate(p, -ST_X(ST_Centroid(p)), -degrees(lat)),
    pi() / 180 * 6378137.0 / sqrt(w) * cos(lat),
    pi() / 180 * 6378137.0 * (1 - 0.0066943799901413165) / w ^ 1.5);
  RETURN NOT ST_IsEmpty(ST_Buffer(p, -tolerance_m));
END;
$$;

COMMENT ON FUNCTION lonlat_fits_disk(geometry, double precision, double precision) IS
  'Whether a disk of radius tolerance_m metres fits inside the polygonal part of a lon/lat geometry whose area (lonlat_polygonal_area_m2) is area_m2.';

CREATE OR REPLACE FUNCTION lonlat_fits_disk(g geometry, tolerance_m double precision) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lonlat_fits_disk(g, lonlat_polygonal_area_m2(g), tolerance_m);

-- The whole rule for two areas: the area in m² of their overlap when they conflict, else NULL.
-- A quick no first: the boxes' common part narrower than 2t (touching neighbours, most of the
-- candidates in a dense region) needs no intersection.
CREATE FUNCTION lonlat_conflict_overlap_m2(a geometry, b geometry, tolerance_m double precision) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  i geometry;
  area double precision;
  s double precision := greatest(ST_YMin(a), ST_YMin(b));
  n double precision := least(ST_YMax(a), ST_YMax(b));
BEGIN
  IF (n - s) * 111700 <= 2 * tolerance_m AND tolerance_m > 0 THEN RETURN NULL; END IF;
  IF (least(ST_XMax(a), ST_XMax(b)) - greatest(ST_XMin(a), ST_XMin(b))) * 111321 <= 2 * tolerance_m AND tolerance_m > 0 THEN RETURN NULL; END IF;
  IF NOT ST_Intersects(a, b) THEN RETURN NULL; END IF;
  BEGIN
    i := ST_CollectionExtract(ST_Intersection(a, b), 3);
  EXCEPTION WHEN OTHERS THEN
    -- GEOS's overlay gave up (a TopologyException on near-degenerate input): the same on a grid
    -- of 1e-12° (0.1 µm), which always succeeds. A write is never refused for this.
    i := ST_CollectionExtract(ST_Intersection(a, b, 1e-12), 3);
  END;
  area := lonlat_area_m2(i);
  IF lonlat_fits_disk(i, area, tolerance_m) THEN RETURN area; END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION lonlat_conflict_overlap_m2(geometry, geometry, double precision) IS
  'The conflict rule for two lon/lat areas: the area in m² of their intersection when a disk of tolerance_m metres fits in it, else NULL.';

-- 3. The tolerance, one value per database. CONFLICT_TOLERANCE_M sets it (the service's migrate
--    step calls sources_set_conflict_tolerance), and every stored pair was computed with it.
CREATE TABLE source_conflict_settings (
  only_row    boolean PRIMARY KEY DEFAULT true CONSTRAINT source_conflict_settings_one_row CHECK (only_row),
  tolerance_m double precision NOT NULL
    CONSTRAINT source_conflict_settings_tolerance_range CHECK (tolerance_m >= 0 AND tolerance_m <= 1000)
);
INSERT INTO source_conflict_settings (tolerance_m) VALUES (9);

COMMENT ON TABLE source_conflict_settings IS 'The conflict tolerance every stored pair was computed with (one row). Change it with sources_set_conflict_tolerance(), which recomputes the pairs.';
COMMENT ON COLUMN source_conflict_settings.only_row IS 'Always true: the table has one row.';
COMMENT ON COLUMN source_conflict_settings.tolerance_m IS 'Metres each area is shrunk inward before two overlapping areas count as a conflict (0: any overlap of positive area).';

CREATE OR REPLACE FUNCTION sources_conflict_tolerance_m() RETURNS double precision
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN (SELECT tolerance_m FROM source_conflict_settings);

-- 4. The pairs. One index, and no foreign keys: a pair is written in both directions and each
--    row costs index entries and, with foreign keys, two lookups of sources; at ~10 partners per
--    new source that was most of the cost of a write (bench/NOTES.md). The rows exist only as
--    the triggers below write them: each unordered pair once per direction (by construction:
--    a pair is found from the source that is new, or from the smaller id of two new ones), and
--    gone with either source (the delete trigger, in the deleting transaction).
CREATE TABLE source_conflict_pairs (
  source_id      text NOT NULL,
  other_id       text NOT NULL,
  overlap_m2     double precision NOT NULL,
  overlap_ratio  double precision NOT NULL,
  overlap_period tstzrange NOT NULL,
  CONSTRAINT source_conflict_pairs_not_self CHECK (source_id <> other_id)
);
-- A source's conflicts, largest first, from the index alone; also how both rows of a pair are
-- found when one source goes.
CREATE INDEX source_conflict_pairs_by_overlap ON source_conflict_pairs (source_id, overlap_m2 DESC, other_id)
  INCLUDE (overlap_ratio, overlap_period);

COMMENT ON TABLE source_conflict_pairs IS 'Storage of source_conflicts: every conflicting pair in both directions, kept by the triggers on sources. Read source_conflicts instead.';
COMMENT ON COLUMN source_conflict_pairs.source_id IS 'The source seen from.';
COMMENT ON COLUMN source_conflict_pairs.other_id IS 'The source it conflicts with.';
COMMENT ON COLUMN source_conflict_pairs.overlap_m2 IS 'Area in m² of the intersection of the two areas.';
COMMENT ON COLUMN source_conflict_pairs.overlap_ratio IS 'overlap_m2 over the area of source_id, 0–1.';
COMMENT ON COLUMN source_conflict_pairs.overlap_period IS 'The intersection of the two periods.';

-- Advisory lock keys (this class, key). Two levels, so that writes in different places run in
-- parallel and two that may overlap do not: an area within 64 cells of 0.01° holds its 1° cells
-- shared and its 0.01° cells exclusive; a larger one (within 64 1° cells) holds its 1° cells
-- exclusive; a larger one still (and tolerance changes) holds key -1 exclusive, which every
-- other write holds shared. Two overlapping areas always meet in a cell of the finer level the
-- smaller of them locks, or in a 1° cell one holds exclusive. Taken in key order, per level.
CREATE FUNCTION sources_conflict_lock(boxes box2d[]) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  fine constant integer := 1397048163;   -- 'SRCC': 0.01° cells, and -1 for everything
  coarse constant integer := 1397048164; -- 1° cells
  fine_cells bigint := 0;
  coarse_cells bigint := 0;
  b box2d;
BEGIN
  FOREACH b IN ARRAY boxes LOOP
    fine_cells := fine_cells + (floor(ST_XMax(b) * 100) - floor(ST_XMin(b) * 100) + 1)::bigint * (floor(ST_YMax(b) * 100) - floor(ST_YMin(b) * 100) + 1)::bigint;
    coarse_cells := coarse_cells + (floor(ST_XMax(b)) - floor(ST_XMin(b)) + 1)::bigint * (floor(ST_YMax(b)) - floor(ST_YMin(b)) + 1)::bigint;
    EXIT WHEN coarse_cells > 64;
  END LOOP;
  IF coarse_cells > 64 THEN
    PERFORM pg_advisory_xact_lock(fine, -1);
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(fine, -1);
  IF fine_cells > 64 THEN
    PERFORM pg_advisory_xact_lock(coarse, c.cell) FROM (
      SELECT DISTINCT ((x + 180) * 181 + (y + 90))::integer AS cell
      FROM unnest(boxes) AS u(b)
      CROSS JOIN LATERAL generate_series(floor(ST_XMin(u.b))::integer, floor(ST_XMax(u.b))::integer) AS x
      CROSS JOIN LATERAL generate_series(floor(ST_YMin(u.b))::integer, floor(ST_YMax(u.b))::integer) AS y
      ORDER BY 1) AS c;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(coarse, c.cell) FROM (
    SELECT DISTINCT ((x + 180) * 181 + (y + 90))::integer AS cell
    FROM unnest(boxes) AS u(b)
    CROSS JOIN LATERAL generate_series(floor(ST_XMin(u.b))::integer, floor(ST_XMax(u.b))::integer) AS x
    CROSS JOIN LATERAL generate_series(floor(ST_YMin(u.b))::integer, floor(ST_YMax(u.b))::integer) AS y
    ORDER BY 1) AS c;
  PERFORM pg_advisory_xact_lock(fine, c.cell) FROM (
    SELECT DISTINCT ((x + 18000) * 18001 + (y + 9000))::integer AS cell
    FROM unnest(boxes) AS u(b)
    CROSS JOIN LATERAL generate_series(floor(ST_XMin(u.b) * 100)::integer, floor(ST_XMax(u.b) * 100)::integer) AS x
    CROSS JOIN LATERAL generate_series(floor(ST_YMin(u.b) * 100)::integer, floor(ST_YMax(u.b) * 100)::integer) AS y
    ORDER BY 1) AS c;
END;
$$;

COMMENT ON FUNCTION sources_conflict_lock(box2d[]) IS
  'Takes the advisory locks of conflict detection for areas with these bounding boxes (0.01° cells, 1° cells, or everything, by size). Held to the end of the transaction.';

-- After an INSERT: the new rows' partners, each pair found once (a pair of two new rows from its
-- smaller id), written in both directions. A partner is locked (FOR KEY SHARE) so that one being
-- deleted at this moment is waited for and, once gone, skipped.
CREATE FUNCTION sources_conflicts_after_insert() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
  t double precision := sources_conflict_tolerance_m();
BEGIN
  PERFORM sources_conflict_lock(ARRAY(SELECT n.geom::box2d FROM new_rows AS n));
  INSERT INTO source_conflict_pairs (source_id, other_id, overlap_m2, overlap_ratio, overlap_period)
  SELECT d.source_id, d.other_id, x.overlap_m2, d.ratio, n.period * o.period
  FROM new_rows AS n
  JOIN sources AS o ON o.geom && n.geom AND NOT isempty(o.period * n.period) AND o.id <> n.id
  CROSS JOIN LATERAL (SELECT lonlat_conflict_overlap_m2(n.geom, o.geom, t) AS overlap_m2 OFFSET 0) AS x
  CROSS JOIN LATERAL (VALUES
    (n.id, o.id, least(1, x.overlap_m2 / n.area_m2)),
    (o.id, n.id, least(1, x.overlap_m2 / o.area_m2))) AS d (source_id, other_id, ratio)
  WHERE x.overlap_m2 IS NOT NULL
    AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM new_rows AS m WHERE m.id = o.id))
  FOR KEY SHARE OF o;
  RETURN NULL;
END;
$$;

-- After a DELETE: both rows of each pair of a deleted source.
CREATE FUNCTION sources_conflicts_after_delete() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM source_conflict_pairs AS p
  USING source_conflict_pairs AS q, old_rows AS o
  WHERE q.source_id = o.id AND p.source_id = q.other_id AND p.other_id = q.source_id;
  DELETE FROM source_conflict_pairs AS p USING old_rows AS o WHERE p.source_id = o.id;
  RETURN NULL;
END;
$$;

CREATE FUNCTION sources_conflicts_after_truncate() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  TRUNCATE source_conflict_pairs;
  RETURN NULL;
END;
$$;

-- After an UPDATE (plain SQL; the API never updates): the updated rows' pairs are computed again,
-- under the lock on everything, since their old and new places both matter.
CREATE FUNCTION sources_conflicts_after_update() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
  t double precision := sources_conflict_tolerance_m();
BEGIN
  PERFORM pg_advisory_xact_lock(1397048163, -1);
  DELETE FROM source_conflict_pairs AS p
  USING source_conflict_pairs AS q, (SELECT id FROM old_rows UNION SELECT id FROM new_rows) AS o
  WHERE q.source_id = o.id AND p.source_id = q.other_id AND p.other_id = q.source_id;
  DELETE FROM source_conflict_pairs AS p
  WHERE p.source_id IN (SELECT id FROM old_rows UNION SELECT id FROM new_rows);
  INSERT INTO source_conflict_pairs (source_id, other_id, overlap_m2, overlap_ratio, overlap_period)
  SELECT d.source_id, d.other_id, x.overlap_m2, d.ratio, n.period * o.period
  FROM new_rows AS n
  JOIN sources AS o ON o.geom && n.geom AND NOT isempty(o.period * n.period) AND o.id <> n.id
  CROSS JOIN LATERAL (SELECT lonlat_conflict_overlap_m2(n.geom, o.geom, t) AS overlap_m2 OFFSET 0) AS x
  CROSS JOIN LATERAL (VALUES
    (n.id, o.id, least(1, x.overlap_m2 / n.area_m2)),
    (o.id, n.id, least(1, x.overlap_m2 / o.area_m2))) AS d (source_id, other_id, ratio)
  WHERE x.overlap_m2 IS NOT NULL
    AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM new_rows AS m WHERE m.id = o.id))
  FOR KEY SHARE OF o;
  RETURN NULL;
END;
$$;

-- The partners are found through sources_geom_gist alone, whatever the statistics say:
-- - a plan made while the table looked empty (a first bulk load, before ANALYZE) would scan the
--   whole table for each new row, and plpgsql keeps a statement's plan for the session: so no
--   sequential scans here (and no JIT, which the cost of a disabled scan would switch on);
-- - the periods are compared as NOT isempty(a * b) (the same as a && b), which no index serves:
--   ANDed with sources_period_gist, a region where every source has the same period would read
--   every one of them for each new row.
ALTER FUNCTION sources_conflicts_after_insert() SET enable_seqscan = off;
ALTER FUNCTION sources_conflicts_after_insert() SET jit = off;
ALTER FUNCTION sources_conflicts_after_update() SET enable_seqscan = off;
ALTER FUNCTION sources_conflicts_after_update() SET jit = off;

CREATE TRIGGER sources_conflicts_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_insert();
CREATE TRIGGER sources_conflicts_update AFTER UPDATE ON sources
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_update();
CREATE TRIGGER sources_conflicts_delete AFTER DELETE ON sources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_delete();
CREATE TRIGGER sources_conflicts_truncate AFTER TRUNCATE ON sources
  FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_truncate();

COMMENT ON TRIGGER sources_conflicts_insert ON sources IS 'Records the conflicts of inserted sources in source_conflict_pairs.';
COMMENT ON TRIGGER sources_conflicts_update ON sources IS 'Recomputes the conflicts of updated sources.';
COMMENT ON TRIGGER sources_conflicts_delete ON sources IS 'Removes deleted sources from their partners'' conflicts.';
COMMENT ON TRIGGER sources_conflicts_truncate ON sources IS 'Empties source_conflict_pairs with sources.';

-- Every pair again, with the tolerance now stored (after a change of it; also the initial fill).
CREATE FUNCTION sources_recompute_conflicts() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  t double precision := sources_conflict_tolerance_m();
  pairs bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1397048163, -1);
  DELETE FROM source_conflict_pairs;
  INSERT INTO source_conflict_pairs (source_id, other_id, overlap_m2, overlap_ratio, overlap_period)
  SELECT d.source_id, d.other_id, x.overlap_m2, d.ratio, n.period * o.period
  FROM sources AS n
  JOIN sources AS o ON o.geom && n.geom AND NOT isempty(o.period * n.period) AND n.id < o.id
  CROSS JOIN LATERAL (SELECT lonlat_conflict_overlap_m2(n.geom, o.geom, t) AS overlap_m2 OFFSET 0) AS x
  CROSS JOIN LATERAL (VALUES
    (n.id, o.id, least(1, x.overlap_m2 / n.area_m2)),
    (o.id, n.id, least(1, x.overlap_m2 / o.area_m2))) AS d (source_id, other_id, ratio)
  WHERE x.overlap_m2 IS NOT NULL;
  GET DIAGNOSTICS pairs = ROW_COUNT;
  RETURN pairs / 2;
END;
$$;

COMMENT ON FUNCTION sources_recompute_conflicts() IS 'Computes every conflicting pair again with the stored tolerance; returns the number of pairs.';

CREATE FUNCTION sources_set_conflict_tolerance(tolerance_m double precision) RETURNS bigint
  LANGUAGE plpgsql VOLATILE STRICT
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1397048163, -1);
  IF (SELECT s.tolerance_m FROM source_conflict_settings AS s) = tolerance_m THEN RETURN NULL; END IF;
  UPDATE source_conflict_settings AS s SET tolerance_m = sources_set_conflict_tolerance.tolerance_m;
  RETURN sources_recompute_conflicts();
END;
$$;

COMMENT ON FUNCTION sources_set_conflict_tolerance(double precision) IS
  'Sets the conflict tolerance in metres and recomputes every pair (NULL when it was already that value, else the number of pairs).';

SELECT sources_recompute_conflicts();

CREATE VIEW source_conflicts AS
  SELECT source_id, other_id, overlap_m2, overlap_ratio, overlap_period FROM source_conflict_pairs;

COMMENT ON VIEW source_conflicts IS
  'Pairs of sources that claim the same land for the same time: periods overlap and the areas still intersect after each is shrunk inward by sources_conflict_tolerance_m() metres. Both directions; across organisations. Kept at write time by the triggers on sources.';
COMMENT ON COLUMN source_conflicts.source_id IS 'The source seen from.';
COMMENT ON COLUMN source_conflicts.other_id IS 'The source it conflicts with.';
COMMENT ON COLUMN source_conflicts.overlap_m2 IS 'Area in m² of the intersection of the two areas (edges straight in lon/lat, WGS 84 ellipsoid).';
COMMENT ON COLUMN source_conflicts.overlap_ratio IS 'overlap_m2 over the area of source_id, 0–1.';
COMMENT ON COLUMN source_conflicts.overlap_period IS 'The period both claim: the intersection of the two periods, [start, end).';
