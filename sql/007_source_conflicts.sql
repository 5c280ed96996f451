-- Conflicts: two sources claim the same land for the same time. The rule, computed here so that
-- a row inserted or deleted with plain SQL is held to it as an API write is:
--
--   A and B conflict when their periods overlap (half-open: [a,b) and [b,c) do not) and their
--   areas still intersect after each is shrunk inward by the tolerance (9 m by default, Millpont
--   METI's value), so touching edges and GPS noise do not count. Symmetric, across organisations.
--
-- Shrinking both and intersecting is shrinking the intersection: A⊖t ∩ B⊖t = (A ∩ B)⊖t (a disk of
-- radius t lies in both exactly when it lies in their intersection). So the test is on I = A ∩ B
-- alone: does a disk of radius t metres fit inside it? Edges are straight in longitude/latitude
-- (RFC 7946), so I is computed in EPSG:4326 and measured with lonlat_area_m2 (sql/004).

-- The tolerance in metres. Replace the function in a later migration to change it.
CREATE FUNCTION sources_conflict_tolerance_m() RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN 9;

COMMENT ON FUNCTION sources_conflict_tolerance_m() IS
  'Conflict tolerance in metres: two overlapping areas conflict only when they still intersect after each is shrunk inward by this much (9 m, as Millpont METI).';

-- The area in m² of any lon/lat geometry's polygonal part (an intersection may be a MultiPolygon
-- or a collection with lines and points, which have no area).
CREATE FUNCTION lonlat_polygonal_area_m2(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (SELECT coalesce(sum(lonlat_area_m2(d.geom)), 0) FROM ST_Dump(ST_CollectionExtract(g, 3)) AS d);

COMMENT ON FUNCTION lonlat_polygonal_area_m2(geometry) IS
  'Area in m² (lonlat_area_m2) of the polygons of a geometry, summed; lines and points count 0.';

-- Whether a disk of radius tolerance_m fits inside the polygonal part of g (lon/lat). Three steps,
-- cheapest first; only the undecided middle pays for the exact test:
-- 1. No area, or a bounding box narrower than 2t in metres (upper bounds of a degree's length):
--    no disk fits.
-- 2. Area above perimeter·t + n·(π/2)·t²: a disk fits. If none did, every point would lie within
--    t of the boundary, and that band has at most perimeter·t plus (π/2)·t² per vertex of area.
--    The perimeter is measured geodesically and raised by 1 % (a lon/lat-straight edge is never
--    shorter than the geodesic; 1 % covers edges of thousands of km).
-- 3. Otherwise the geometry shrunk by t on the ellipsoid (ST_Buffer on geography, which works
--    in a local projection) is not empty.
CREATE FUNCTION lonlat_fits_disk(g geometry, tolerance_m double precision) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
  p geometry := ST_CollectionExtract(g, 3);
  area double precision;
  box box2d;
BEGIN
  IF ST_IsEmpty(p) THEN RETURN false; END IF;
  area := lonlat_polygonal_area_m2(p);
  IF area <= 0 THEN RETURN false; END IF;
  IF tolerance_m <= 0 THEN RETURN true; END IF;
  box := p::box2d;
  -- A degree of latitude is at most 111,700 m; a degree of longitude at most 111,321 m times the
  -- cosine of the latitude nearest the equator (0 when the box spans it).
  IF (ST_YMax(box) - ST_YMin(box)) * 111700 <= 2 * tolerance_m
     OR (ST_XMax(box) - ST_XMin(box)) * 111321
        * cos(radians(CASE WHEN ST_YMin(box) <= 0 AND ST_YMax(box) >= 0 THEN 0 ELSE least(abs(ST_YMin(box)), abs(ST_YMax(box))) END))
        <= 2 * tolerance_m THEN
    RETURN false;
  END IF;
  IF area > ST_Perimeter(p::geography) * 1.01 * tolerance_m + ST_NPoints(p) * pi() / 2 * tolerance_m ^ 2 THEN
    RETURN true;
  END IF;
  RETURN NOT ST_IsEmpty(ST_Buffer(p::geography, -tolerance_m)::geometry);
END;
$$;

COMMENT ON FUNCTION lonlat_fits_disk(geometry, double precision) IS
  'Whether a disk of radius tolerance_m metres fits inside the polygonal part of a lon/lat geometry: the conflict test on the intersection of two areas.';

-- Every conflicting pair, in both directions (A→B and B→A), with the overlap as seen from
-- source_id. Backed by the GiST indexes: for one source the planner finds its candidates with
-- sources_geom_gist and sources_period_gist and tests only those.
CREATE VIEW source_conflicts AS
  SELECT s.id AS source_id,
         o.id AS other_id,
         x.overlap_m2,
         least(1, x.overlap_m2 / nullif(s.area_m2, 0)) AS overlap_ratio,
         s.period * o.period AS overlap_period
  FROM sources AS s
  JOIN sources AS o ON o.geom && s.geom AND o.period && s.period AND o.id <> s.id
  CROSS JOIN LATERAL (SELECT ST_Intersection(s.geom, o.geom) AS geom) AS i
  CROSS JOIN LATERAL (SELECT lonlat_polygonal_area_m2(i.geom) AS overlap_m2) AS x
  WHERE ST_Intersects(s.geom, o.geom)
    AND lonlat_fits_disk(i.geom, sources_conflict_tolerance_m());

COMMENT ON VIEW source_conflicts IS
  'Pairs of sources that claim the same land for the same time: periods overlap and the areas still intersect after each is shrunk inward by sources_conflict_tolerance_m() metres. Both directions; across organisations.';
COMMENT ON COLUMN source_conflicts.source_id IS 'The source seen from.';
COMMENT ON COLUMN source_conflicts.other_id IS 'The source it conflicts with.';
COMMENT ON COLUMN source_conflicts.overlap_m2 IS 'Area in m² of the intersection of the two areas (edges straight in lon/lat, WGS 84 ellipsoid).';
COMMENT ON COLUMN source_conflicts.overlap_ratio IS 'overlap_m2 over the area of source_id, 0–1.';
COMMENT ON COLUMN source_conflicts.overlap_period IS 'The period both claim: the intersection of the two periods, [start, end).';
