-- Conflict detection for less, the rule and its results unchanged (bench/NOTES.md, "Conflicts at
-- write time, cheaper"): per overlapping pair in the dense region, the rule fell from ~65 µs to
-- ~15 µs, and a 1,000-row insert there from 1.5–1.9 s to ~0.8 s (0.45 s with no detection).
--
-- 1. The overlap without GEOS's overlay when one area covers the other's part of their common
--    box. With K the intersection of the two bounding boxes, A ∩ B lies in K; when A covers K,
--    A ∩ B = B ∩ K, which is B clipped by a rectangle (ST_ClipByBox2D, ~4 µs where
--    ST_Intersection takes ~30). That is the case whenever A is a rectangle, whenever one area
--    holds the other's corner region whole (a field inside a larger claim), and in most overlaps
--    of compact parcels. The clip is exact in area but, GEOS says, not always a valid polygon;
--    so it only decides when the cheap bounds of the disk test are conclusive (no buffer is run
--    on it). Otherwise, and whenever neither covers K, the overlay decides as before (sql/009).
-- 2. Partners are no longer locked row by row (FOR KEY SHARE, a heap write and a WAL record per
--    partner: ~40 % of a dense insert). A delete takes the same cell locks as an insert of the
--    deleted areas, before it removes their pairs, so of an insert and a delete of overlapping
--    areas one waits for the other and then sees it: the insert does not pair with a partner
--    whose delete committed first, and the delete removes the pairs of an insert that committed
--    first.
-- 3. Two SQL functions that ran through the SQL-function executor at every call (~20 µs; 7.6 % of
--    PostgreSQL's time under a dense single-POST load, perf): wgs84_area_density, which the
--    planner does not inline because its argument (radians(ST_Y(ST_Centroid(g))), an expensive
--    expression to PostgreSQL) appears twice in its body, and sources_conflict_tolerance_m, whose
--    body is a subquery. Both are plpgsql now, with the same formulas: every area in
--    lonlat_area_m2's small-polygon path (the generated area_m2 of each insert, and the overlap of
--    each pair) costs 2.5 µs instead of 6.5, and the rule per pair ~15 µs instead of ~21.

-- 3. The two functions in plpgsql.
CREATE OR REPLACE FUNCTION wgs84_area_density(lat double precision) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  -- a²(1-e²)·cos φ / (1 - e² sin² φ)²: d/dφ of wgs84_zone_area (sql/008's formula).
  RETURN 6378137.0 ^ 2 * (1 - 0.0066943799901413165) * cos(lat) / (1 - 0.0066943799901413165 * sin(lat) ^ 2) ^ 2;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflict_tolerance_m() RETURNS double precision
  LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
  RETURN (SELECT s.tolerance_m FROM source_conflict_settings AS s);
END;
$$;

-- 1. The rule with the clip. The two cheap steps of lonlat_fits_disk (sql/008): true or false
--    when they decide, NULL when only the buffer can.
CREATE FUNCTION lonlat_fits_disk_bounds(g geometry, area_m2 double precision, tolerance_m double precision) RETURNS boolean
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

-- The polygonal part of A ∩ B by GEOS's overlay; on a grid of 1e-12° (0.1 µm), which always
-- succeeds, when GEOS gives up on near-degenerate input (sql/009).
CREATE FUNCTION lonlat_polygonal_overlay(a geometry, b geometry) RETURNS geometry
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

-- 2. The triggers of sql/008 without FOR KEY SHARE; the delete trigger takes the cell locks.
CREATE OR REPLACE FUNCTION sources_conflicts_after_insert() RETURNS trigger
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
    AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM new_rows AS m WHERE m.id = o.id));
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflicts_after_update() RETURNS trigger
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
    AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM new_rows AS m WHERE m.id = o.id));
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION sources_conflicts_after_delete() RETURNS trigger
  LANGUAGE plpgsql
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

-- CREATE OR REPLACE dropped sql/008's settings of the trigger functions: set them again.
ALTER FUNCTION sources_conflicts_after_insert() SET enable_seqscan = off;
ALTER FUNCTION sources_conflicts_after_insert() SET jit = off;
ALTER FUNCTION sources_conflicts_after_update() SET enable_seqscan = off;
ALTER FUNCTION sources_conflicts_after_update() SET jit = off;
