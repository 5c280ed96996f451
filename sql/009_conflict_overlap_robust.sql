-- The conflict rule never refuses a write: GEOS's predicate can fail too, not only its overlay.
--
-- sql/008's lonlat_conflict_overlap_m2 retried ST_Intersection on a grid when GEOS gave up, but
-- called ST_Intersects before that, unprotected. Two valid polygons with vertices a rounding
-- apart (one at -6.769, the other at -6.768999999999999: the same corner digitised twice, or
-- moved by a float addition) make GEOS's ST_Intersects fail with "TopologyException: side
-- location conflict", and the INSERT that met them failed with it: a 500 for a valid POST
-- (found by make bench, test/db/conflicts.test.ts has the pair). Now the predicate is inside the
-- same protected block as the overlay, and the retry on a grid of 1e-12° (0.1 µm), which always
-- succeeds, decides both.
CREATE OR REPLACE FUNCTION lonlat_conflict_overlap_m2(a geometry, b geometry, tolerance_m double precision) RETURNS double precision
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
  BEGIN
    IF NOT ST_Intersects(a, b) THEN RETURN NULL; END IF;
    i := ST_CollectionExtract(ST_Intersection(a, b), 3);
  EXCEPTION WHEN OTHERS THEN
    -- GEOS gave up (a TopologyException on near-degenerate input), in the predicate or the
    -- overlay: the overlay on a grid of 1e-12°, which always succeeds, decides. A write is never
    -- refused for this.
    i := ST_CollectionExtract(ST_Intersection(a, b, 1e-12), 3);
  END;
  area := lonlat_area_m2(i);
  IF lonlat_fits_disk(i, area, tolerance_m) THEN RETURN area; END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION lonlat_conflict_overlap_m2(geometry, geometry, double precision) IS
  'The conflict rule for two lon/lat areas: the area in m² of their intersection when a disk of tolerance_m metres fits in it, else NULL.';
