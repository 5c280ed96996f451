-- before: 008_source_conflict_pairs.sql (it fills source_conflict_pairs with sources_recompute_conflicts)
-- Conflicts: two sources claim the same land for the same time. The rule, and how the database
-- keeps its results, so that a row inserted, updated or deleted with plain SQL is held to it as
-- an API write is:
--
--   A and B conflict when their periods overlap (half-open: [a,b) and [b,c) do not) and their
--   areas still intersect after each is shrunk inward by the tolerance (9 m by default, Millpont
--   METI's value), so touching edges and GPS noise do not count. Symmetric, across organisations.
--
-- Shrinking both and intersecting is shrinking the intersection: A⊖t ∩ B⊖t = (A ∩ B)⊖t (a disk of
-- radius t lies in both exactly when it lies in their intersection). So the test is on I = A ∩ B
-- alone: does a disk of radius t metres fit inside it? Edges are straight in longitude/latitude
-- (RFC 7946), so I is computed in EPSG:4326 and measured with lonlat_area_m2 (area.sql).
--
-- The rule is decided once, at write time: every conflicting pair is stored in
-- source_conflict_pairs (sql/008), both directions, by the triggers on sources below, and read
-- through the view source_conflicts (conflict_view.sql).
--
-- 1. The tolerance          sources_conflict_tolerance_m
-- 2. Does a disk fit in I   lonlat_polygonal_area_m2, lonlat_fits_disk_bounds, lonlat_fits_disk
-- 3. The rule for two areas lonlat_polygonal_overlay, lonlat_conflict_overlap_m2
-- 4. Writes in parallel     sources_conflict_lock_class, sources_conflict_lock_all,
--                           sources_conflict_lock
-- 5. The pairs written      sources_conflict_pairs_write
-- 6. The triggers           sources_conflicts_after_insert, _update, _delete, _truncate
-- 7. Every pair again       sources_recompute_conflicts, sources_set_conflict_tolerance
--
-- Changing the rule (sections 1 to 3) changes no stored pair by itself: pairs are decided when
-- they are written. So a change of the rule comes with a numbered migration that computes them
-- again, sql/NNN_recompute_conflicts.sql: SELECT sources_recompute_conflicts(); (docs/code.md,
-- "How to change X"). This file runs before any pending numbered file, so that one uses the new
-- rule. A change that leaves every pair as it was (locks, plans, comments) needs none.

-- 1. The tolerance in metres, one value per database, stored in source_conflict_settings (sql/008):
--    CONFLICT_TOLERANCE_M sets it (the service's migrate step calls sources_set_conflict_tolerance),
--    and every stored pair was computed with it. plpgsql: a SQL function whose body is a subquery
--    is not inlined, and runs through the slower SQL-function executor at every call.
CREATE OR REPLACE FUNCTION sources_conflict_tolerance_m() RETURNS double precision
  LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
  RETURN (SELECT s.tolerance_m FROM source_conflict_settings AS s);
END;
$$;

COMMENT ON FUNCTION sources_conflict_tolerance_m() IS
  'Conflict tolerance in metres: two overlapping areas conflict only when they still intersect after each is shrunk inward by this much (9 m, as Millpont METI).';

-- 2. The area in m² of any lon/lat geometry's polygonal part (an intersection may be a
--    MultiPolygon or a collection with lines and points, which have no area).
CREATE OR REPLACE FUNCTION lonlat_polygonal_area_m2(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lonlat_area_m2(ST_CollectionExtract(g, 3));

COMMENT ON FUNCTION lonlat_polygonal_area_m2(geometry) IS
  'Area in m² (lonlat_area_m2) of the polygons of a geometry, summed; lines and points count 0.';

--    Whether a disk of radius t fits inside g, cheapest test first; only the undecided middle
--    pays for a buffer. The two cheap bounds: true or false when they decide, NULL when only the
--    buffer can.
--    - No area, or a bounding box narrower than 2t in metres (upper bounds of a degree's length):
--      no disk fits.
--    - Area above perimeter·t + n·(π/2)·t²: a disk fits. If none did, every point would lie within
--      t of the boundary, and that band has at most perimeter·t plus (π/2)·t² per vertex of area.
--      The perimeter is bounded from above in the plane scaled to the largest length of a degree
--      in the box: no geodesic is involved, so an edge of 180° of longitude is no failure.
CREATE OR REPLACE FUNCTION lonlat_fits_disk_bounds(g geometry, area_m2 double precision, tolerance_m double precision) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  box box2d;
  c double precision;
BEGIN
  IF area_m2 <= 0 THEN RETURN false; END IF;
  IF tolerance_m <= 0 THEN RETURN true; END IF;
  box := g::box2d;
  -- A degree of latitude is at most 111,700 m; a degree of longitude at most 111,321 m times the
  -- cosine of the latitude nearest the equator (1 when the box spans it).
  c := cos(radians(CASE WHEN ST_YMin(box) <= 0 AND ST_YMax(box) >= 0 THEN 0 ELSE least(abs(ST_YMin(box)), abs(ST_YMax(box))) END));
  IF (ST_YMax(box) - ST_YMin(box)) * 111700 <= 2 * tolerance_m OR (ST_XMax(box) - ST_XMin(box)) * 111321 * c <= 2 * tolerance_m THEN
    RETURN false;
  END IF;
  -- If no disk fitted, every point would lie within t of the boundary: a band of at most
  -- perimeter·t plus (π/2)·t² per vertex, the perimeter bounded from above in the plane scaled
  -- to the largest length of a degree in the box.
  IF area_m2 > ST_Perimeter(ST_Scale(g, 111321 * c, 111700)) * tolerance_m + ST_NPoints(g) * pi() / 2 * tolerance_m ^ 2 THEN
    RETURN true;
  END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION lonlat_fits_disk_bounds(geometry, double precision, double precision) IS
  'The cheap bounds of lonlat_fits_disk: true or false when they decide whether a disk of tolerance_m metres fits in g (of area area_m2), NULL when only the buffer can.';

--    The whole test: the bounds, and when they do not decide, whether g shrunk by t is empty.
CREATE OR REPLACE FUNCTION lonlat_fits_disk(g geometry, area_m2 double precision, tolerance_m double precision) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  decided boolean := lonlat_fits_disk_bounds(g, area_m2, tolerance_m);
  lat double precision;
  w double precision;
  p geometry;
BEGIN
  IF decided IS NOT NULL THEN RETURN decided; END IF;
  -- The buffer is planar, in metres about the centroid (M and N of the ellipsoid there), so it
  -- cannot fail the way a geography buffer can on wide or polar areas.
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

--    The same for a geometry whose area is not known yet.
CREATE OR REPLACE FUNCTION lonlat_fits_disk(g geometry, tolerance_m double precision) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN lonlat_fits_disk(g, lonlat_polygonal_area_m2(g), tolerance_m);

COMMENT ON FUNCTION lonlat_fits_disk(geometry, double precision) IS
  'Whether a disk of radius tolerance_m metres fits inside the polygonal part of a lon/lat geometry: the conflict test on the intersection of two areas.';

-- 3. The polygonal part of A ∩ B by GEOS's overlay. GEOS gives up on some near-degenerate input
--    (a TopologyException, in the overlay or in a predicate: two valid polygons whose shared
--    corner differs by a rounding, -6.769 and -6.768999999999999); then the overlay on a grid of
--    1e-12° (0.1 µm), which always succeeds, decides. A write is never refused for this.
--    PARALLEL UNSAFE: the EXCEPTION block opens a subtransaction, which PostgreSQL forbids while
--    a query runs in parallel; marked unsafe, it keeps any query that calls it (an analyst's over
--    many candidates) out of parallel plans instead of failing it.
CREATE OR REPLACE FUNCTION lonlat_polygonal_overlay(a geometry, b geometry) RETURNS geometry
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE
AS $$
BEGIN
  RETURN ST_CollectionExtract(ST_Intersection(a, b), 3);
EXCEPTION WHEN OTHERS THEN
  RETURN ST_CollectionExtract(ST_Intersection(a, b, 1e-12), 3);
END;
$$;

COMMENT ON FUNCTION lonlat_polygonal_overlay(geometry, geometry) IS
  'The polygonal part of the intersection of two geometries (GEOS overlay; on a 1e-12° grid when GEOS gives up). PARALLEL UNSAFE: its EXCEPTION block opens a subtransaction.';

--    The whole rule for two areas: the area in m² of their overlap when they conflict, else NULL.
--    - A quick no first: the two boxes' common part K narrower than 2t (touching neighbours, most
--      of the candidates in a dense region) needs no intersection.
--    - The overlap without GEOS's overlay when one area covers K: A ∩ B lies in K, so when A
--      covers K, A ∩ B = B ∩ K, which is B clipped by a rectangle (ST_ClipByBox2D, several times
--      cheaper than ST_Intersection). That is the case whenever A is a rectangle, whenever one
--      area holds the other's corner region whole (a field inside a larger claim), and in most
--      overlaps of compact parcels. The clip is exact in area but, GEOS says, not always a valid
--      polygon; so it only decides when the cheap bounds are conclusive (no buffer is run on it).
--    - Otherwise, and whenever neither covers K, the overlay decides.
--    PARALLEL UNSAFE for the same reason as lonlat_polygonal_overlay.
CREATE OR REPLACE FUNCTION lonlat_conflict_overlap_m2(a geometry, b geometry, tolerance_m double precision) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE
AS $$
DECLARE
  -- Bounding boxes as computed from the coordinates (exact, not the stored float4 boxes).
  ba box2d := a::box2d;
  bb box2d := b::box2d;
  k box2d;
  i geometry;
  area double precision;
  fits boolean;
BEGIN
  k := ST_MakeBox2D(ST_Point(greatest(ST_XMin(ba), ST_XMin(bb)), greatest(ST_YMin(ba), ST_YMin(bb))),
                    ST_Point(least(ST_XMax(ba), ST_XMax(bb)), least(ST_YMax(ba), ST_YMax(bb))));
  -- No common box of any area, or one narrower than 2t: no disk of radius t fits in A ∩ B.
  IF ST_YMax(k) <= ST_YMin(k) OR ST_XMax(k) <= ST_XMin(k)
     OR tolerance_m > 0 AND ((ST_YMax(k) - ST_YMin(k)) * 111700 <= 2 * tolerance_m OR (ST_XMax(k) - ST_XMin(k)) * 111321 <= 2 * tolerance_m) THEN
    RETURN NULL;
  END IF;
  BEGIN
    IF ST_Covers(a, ST_SetSRID(k::geometry, ST_SRID(a))) THEN i := ST_ClipByBox2D(b, k);
    ELSIF ST_Covers(b, ST_SetSRID(k::geometry, ST_SRID(b))) THEN i := ST_ClipByBox2D(a, k);
    ELSIF NOT ST_Intersects(a, b) THEN RETURN NULL;
    END IF;
  EXCEPTION WHEN OTHERS THEN
    -- GEOS gave up in a predicate (sql/009's "side location conflict"): the overlay decides.
    i := NULL;
  END;
  IF i IS NOT NULL THEN
    i := ST_CollectionExtract(i, 3);
    area := lonlat_area_m2(i);
    fits := lonlat_fits_disk_bounds(i, area, tolerance_m);
    IF fits IS NOT NULL THEN RETURN CASE WHEN fits THEN area END; END IF;
  END IF;
  -- Neither covers the common box, or only a buffer can decide: the overlay, a valid polygon.
  i := lonlat_polygonal_overlay(a, b);
  area := lonlat_area_m2(i);
  IF lonlat_fits_disk(i, area, tolerance_m) THEN RETURN area; END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION lonlat_conflict_overlap_m2(geometry, geometry, double precision) IS
  'The conflict rule for two lon/lat areas: the area in m² of their intersection when a disk of tolerance_m metres fits in it, else NULL.';

-- 4. Writes in parallel: a new source must see every source committed before it, and the pair of
--    two sources inserted at the same moment must be found by one of them. So conflict detection
--    takes transaction-level advisory locks on the cells its areas touch and only then looks for
--    partners, in a new snapshot: writes in different places go on in parallel, writes in the
--    same place one after the other. A delete takes the same locks as an insert of the deleted
--    areas before it removes their pairs, so of an insert and a delete of overlapping areas one
--    waits for the other and then sees it: the insert does not pair with a partner whose delete
--    committed first, and the delete removes the pairs of an insert that committed first.
--
--    Lock keys (this class, key), two levels: an area within 64 cells of 0.01° holds its 1° cells
--    shared and its 0.01° cells exclusive; a larger one (within 64 1° cells) holds its 1° cells
--    exclusive; a larger one still (and updates, recomputations, tolerance changes) holds key -1
--    exclusive, which every other write holds shared. Two overlapping areas always meet in a cell
--    of the finer level the smaller of them locks, or in a 1° cell one holds exclusive. Taken in
--    key order, per level. The cells are counted and listed in plpgsql (a generate_series in SQL
--    made the planner set up 1,000-row aggregates for one or four cells), and each level's locks
--    are taken by one statement over the array, in key order (unnest keeps the array's order).
--
--    The class of the keys is defined once, by sources_conflict_lock_class; the lock on
--    everything once, by sources_conflict_lock_all.
CREATE OR REPLACE FUNCTION sources_conflict_lock_class() RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN 1397048163; -- 'SRCC'

COMMENT ON FUNCTION sources_conflict_lock_class() IS
  'The advisory lock class of conflict detection: (class, cell) for 0.01° cells and (class, -1) for everything; 1° cells are (class + 1, cell).';

CREATE OR REPLACE FUNCTION sources_conflict_lock_all() RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(sources_conflict_lock_class(), -1);
END;
$$;

COMMENT ON FUNCTION sources_conflict_lock_all() IS
  'Takes the advisory lock of conflict detection on everything (exclusive; every other conflict write holds it shared), to the end of the transaction: updates, recomputations and tolerance changes wait for every write and every write for them.';

CREATE OR REPLACE FUNCTION sources_conflict_lock(boxes box2d[]) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  fine constant integer := sources_conflict_lock_class();       -- 0.01° cells, and -1 for everything
  coarse constant integer := sources_conflict_lock_class() + 1; -- 1° cells
  fine_cells bigint := 0;
  coarse_cells bigint := 0;
  b box2d;
  coarse_keys integer[] := '{}';
  fine_keys integer[] := '{}';
BEGIN
  FOREACH b IN ARRAY boxes LOOP
    fine_cells := fine_cells + (floor(ST_XMax(b) * 100) - floor(ST_XMin(b) * 100) + 1)::bigint * (floor(ST_YMax(b) * 100) - floor(ST_YMin(b) * 100) + 1)::bigint;
    coarse_cells := coarse_cells + (floor(ST_XMax(b)) - floor(ST_XMin(b)) + 1)::bigint * (floor(ST_YMax(b)) - floor(ST_YMin(b)) + 1)::bigint;
    EXIT WHEN coarse_cells > 64;
  END LOOP;
  IF coarse_cells > 64 THEN
    PERFORM sources_conflict_lock_all();
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(fine, -1);
  -- At most 64 cells of each level from here (the counts above, before duplicates go).
  FOREACH b IN ARRAY boxes LOOP
    FOR x IN floor(ST_XMin(b))::integer .. floor(ST_XMax(b))::integer LOOP
      FOR y IN floor(ST_YMin(b))::integer .. floor(ST_YMax(b))::integer LOOP
        coarse_keys := coarse_keys || ((x + 180) * 181 + (y + 90));
      END LOOP;
    END LOOP;
    IF fine_cells <= 64 THEN
      FOR x IN floor(ST_XMin(b) * 100)::integer .. floor(ST_XMax(b) * 100)::integer LOOP
        FOR y IN floor(ST_YMin(b) * 100)::integer .. floor(ST_YMax(b) * 100)::integer LOOP
          fine_keys := fine_keys || ((x + 18000) * 18001 + (y + 9000));
        END LOOP;
      END LOOP;
    END IF;
  END LOOP;
  IF fine_cells > 64 THEN
    PERFORM pg_advisory_xact_lock(coarse, k) FROM (SELECT DISTINCT k FROM unnest(coarse_keys) AS k ORDER BY k) AS c;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(coarse, k) FROM (SELECT DISTINCT k FROM unnest(coarse_keys) AS k ORDER BY k) AS c;
  PERFORM pg_advisory_xact_lock(fine, k) FROM (SELECT DISTINCT k FROM unnest(fine_keys) AS k ORDER BY k) AS c;
END;
$$;

COMMENT ON FUNCTION sources_conflict_lock(box2d[]) IS
  'Takes the advisory locks of conflict detection for areas with these bounding boxes (0.01° cells, 1° cells, or everything, by size). Held to the end of the transaction.';

-- 5. The one statement that writes pairs: the conflicts of the sources with these ids (rows of
--    sources as they are now) with every source, each pair found once (a pair of two of these
--    sources from its smaller id) and written in both directions, with the stored tolerance.
--    The caller has taken the locks and removed what the pairs replace. Returns the rows written
--    (two a pair).
--
--    The partners are found through sources_geom_gist alone, whatever the statistics say, hence
--    the function's settings:
--    - a plan made while the table looked empty (a first bulk load, before ANALYZE) would scan the
--      whole table for each new row, and plpgsql keeps a statement's plan for the session: so no
--      sequential scans here (and no JIT, which the cost of a disabled scan would switch on);
--    - the periods are compared as NOT isempty(a * b) (the same as a && b), which no index serves:
--      ANDed with sources_period_gist, a region where every source has the same period would read
--      every one of them for each new row.
--    Its statement runs in a snapshot of its own, taken after the caller's locks.
CREATE OR REPLACE FUNCTION sources_conflict_pairs_write(ids text[]) RETURNS bigint
  LANGUAGE plpgsql VOLATILE STRICT
  SET enable_seqscan = off
  SET jit = off
AS $$
DECLARE
  t double precision := sources_conflict_tolerance_m();
  written bigint;
BEGIN
  INSERT INTO source_conflict_pairs (source_id, other_id, overlap_m2, overlap_ratio, overlap_period)
  SELECT d.source_id, d.other_id, x.overlap_m2, d.ratio, n.period * o.period
  FROM sources AS n
  JOIN sources AS o ON o.geom && n.geom AND NOT isempty(o.period * n.period) AND o.id <> n.id
  CROSS JOIN LATERAL (SELECT lonlat_conflict_overlap_m2(n.geom, o.geom, t) AS overlap_m2 OFFSET 0) AS x
  CROSS JOIN LATERAL (VALUES
    (n.id, o.id, least(1, x.overlap_m2 / n.area_m2)),
    (o.id, n.id, least(1, x.overlap_m2 / o.area_m2))) AS d (source_id, other_id, ratio)
  WHERE n.id = ANY (ids) AND x.overlap_m2 IS NOT NULL
    AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM unnest(ids) AS m (id) WHERE m.id = o.id));
  GET DIAGNOSTICS written = ROW_COUNT;
  RETURN written;
END;
$$;

COMMENT ON FUNCTION sources_conflict_pairs_write(text[]) IS
  'Writes the conflicting pairs of the sources with these ids in source_conflict_pairs, both directions, with the stored tolerance; returns the rows written. Used by the triggers on sources and by sources_recompute_conflicts; the caller takes the locks and removes the pairs these replace.';

-- 6. The triggers, one statement at a time (transition tables). After an INSERT: the new rows'
--    pairs. After an UPDATE that moves land (geometry, period or organisation): the updated rows' pairs
--    are computed again, under the lock on everything, since their old and new places both matter.
--    After a DELETE: both rows of each pair of a deleted source. After a TRUNCATE: all of them.
--    Their statements (and those of the functions they call) take PL/pgSQL's generic plan at
--    once (plan_cache_mode): each call's arrays of ids and boxes are new values, and PostgreSQL
--    planned them afresh at every write, which cost more than running them; the generic plans are
--    the same index scans (docs/performance.md, "Writes").
CREATE OR REPLACE FUNCTION sources_conflicts_after_insert() RETURNS trigger
  LANGUAGE plpgsql
  SET enable_seqscan = off
  SET jit = off
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  PERFORM sources_conflict_lock(ARRAY(SELECT n.geom::box2d FROM new_rows AS n));
  PERFORM sources_conflict_pairs_write(ARRAY(SELECT n.id FROM new_rows AS n));
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflicts_after_update() RETURNS trigger
  LANGUAGE plpgsql
  SET enable_seqscan = off
  SET jit = off
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  -- A change of attributes alone moves no land: nothing to recompute, and no lock on everything.
  IF NOT EXISTS (SELECT 1 FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
                 WHERE n.geom IS DISTINCT FROM o.geom OR n.period IS DISTINCT FROM o.period OR n.organisation IS DISTINCT FROM o.organisation)
     AND NOT EXISTS (SELECT n.id FROM new_rows AS n EXCEPT SELECT o.id FROM old_rows AS o) THEN
    RETURN NULL;
  END IF;
  PERFORM sources_conflict_lock_all();
  DELETE FROM source_conflict_pairs AS p
  USING source_conflict_pairs AS q, (SELECT id FROM old_rows UNION SELECT id FROM new_rows) AS o
  WHERE q.source_id = o.id AND p.source_id = q.other_id AND p.other_id = q.source_id;
  DELETE FROM source_conflict_pairs AS p
  WHERE p.source_id IN (SELECT id FROM old_rows UNION SELECT id FROM new_rows);
  PERFORM sources_conflict_pairs_write(ARRAY(SELECT n.id FROM new_rows AS n));
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflicts_after_delete() RETURNS trigger
  LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  PERFORM sources_conflict_lock(ARRAY(SELECT o.geom::box2d FROM old_rows AS o));
  DELETE FROM source_conflict_pairs AS p
  USING source_conflict_pairs AS q, old_rows AS o
  WHERE q.source_id = o.id AND p.source_id = q.other_id AND p.other_id = q.source_id;
  DELETE FROM source_conflict_pairs AS p USING old_rows AS o WHERE p.source_id = o.id;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflicts_after_truncate() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  TRUNCATE source_conflict_pairs;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER sources_conflicts_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_insert();
CREATE OR REPLACE TRIGGER sources_conflicts_update AFTER UPDATE ON sources
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_update();
CREATE OR REPLACE TRIGGER sources_conflicts_delete AFTER DELETE ON sources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_delete();
CREATE OR REPLACE TRIGGER sources_conflicts_truncate AFTER TRUNCATE ON sources
  FOR EACH STATEMENT EXECUTE FUNCTION sources_conflicts_after_truncate();

COMMENT ON TRIGGER sources_conflicts_insert ON sources IS 'Records the conflicts of inserted sources in source_conflict_pairs.';
COMMENT ON TRIGGER sources_conflicts_update ON sources IS 'Recomputes the conflicts of updated sources.';
COMMENT ON TRIGGER sources_conflicts_delete ON sources IS 'Removes deleted sources from their partners'' conflicts.';
COMMENT ON TRIGGER sources_conflicts_truncate ON sources IS 'Empties source_conflict_pairs with sources.';

-- 7. Every pair again, with the rule and the tolerance now stored: after a change of the
--    tolerance, after a change of the rule (a numbered migration calls it: see the header), and
--    the initial fill. Each pair removed and written again is a conflict.ended and a
--    conflict.started event (events.sql).
CREATE OR REPLACE FUNCTION sources_recompute_conflicts() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  pairs bigint;
BEGIN
  PERFORM sources_conflict_lock_all();
  DELETE FROM source_conflict_pairs;
  pairs := sources_conflict_pairs_write(ARRAY(SELECT s.id FROM sources AS s)) / 2;
  -- The conflicts of sql/040 follow (conflict_states.sql): pairs gone are resolved as recomputed.
  -- Absent while the numbered files before 040 run (sql/008 calls this on a new database).
  IF to_regprocedure('conflicts_sync(text[],text)') IS NOT NULL THEN
    PERFORM conflicts_sync(ARRAY(SELECT s.id FROM sources AS s), 'recomputed');
  END IF;
  RETURN pairs;
END;
$$;

COMMENT ON FUNCTION sources_recompute_conflicts() IS 'Computes every conflicting pair again with the stored rule and tolerance (after a change of either); returns the number of pairs.';

CREATE OR REPLACE FUNCTION sources_set_conflict_tolerance(tolerance_m double precision) RETURNS bigint
  LANGUAGE plpgsql VOLATILE STRICT
AS $$
BEGIN
  PERFORM sources_conflict_lock_all();
  IF (SELECT s.tolerance_m FROM source_conflict_settings AS s) = tolerance_m THEN RETURN NULL; END IF;
  UPDATE source_conflict_settings AS s SET tolerance_m = sources_set_conflict_tolerance.tolerance_m;
  RETURN sources_recompute_conflicts();
END;
$$;

COMMENT ON FUNCTION sources_set_conflict_tolerance(double precision) IS
  'Sets the conflict tolerance in metres and recomputes every pair (NULL when it was already that value, else the number of pairs).';
