-- before: 004_source_area.sql (its generated column sources.area_m2 calls lonlat_area_m2)
-- The area of a lon/lat polygon as RFC 7946 defines its shape: edges are straight lines in
-- longitude and latitude, not great-circle arcs. ST_Area(geom::geography) reads every edge as an
-- arc, so a band from -170 to 10 longitude measured half the globe and the whole-world box could
-- not be measured at all (an antipodal edge). lonlat_area_m2 measures the area on the WGS 84
-- ellipsoid along the edges as they are drawn: it has no antipodal case and no failure for any
-- valid polygon. sources.area_m2 (sql/004, sql/008) stores it for every source, and the conflict
-- rule (conflict_rule.sql) measures overlaps with it.
--
-- Two ways, one function:
-- - Any polygon (lonlat_area_m2_green): by Green's theorem the area of a region is the line
--   integral of Z(lat) dlon around its boundary, where Z(lat) is the area between the equator and
--   the parallel at lat per radian of longitude (the authalic zone area). Along a straight lon/lat
--   edge lat varies linearly with lon, so each edge contributes dlon times the mean of Z over its
--   latitudes: exact for parallels and meridians, and a Gauss-Legendre rule of 2, 3 or 5 points
--   for slanted edges (chosen by the edge's latitude span). Boxes are exact; an edge spanning 80°
--   of latitude is within 2e-9.
-- - Small polygons, which are most sources and nearly every overlap: the area is the integral of
--   f(lat) = M·N·cos(lat) over the polygon in (lon, lat) radians. With f taken linear about the
--   polygon's centroid latitude the integral is f(centroid)·area: the first-order term vanishes at
--   the centroid, and the rest is at most span²/8 of the area (span in radians): under 1e-9 for a
--   span of 0.005° of latitude. Within 2.5e-10 of Green's integral for 0.001° boxes (and more
--   precise than it below 1e-5°, where its zone areas cancel), and much faster.

CREATE OR REPLACE FUNCTION wgs84_zone_area(lat double precision) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  -- a²(1-e²)/2 · (sin φ / (1 - e² sin² φ) + atanh(e sin φ) / e), WGS 84 a and e² (f = 1/298.257223563).
  RETURN 6378137.0 ^ 2 * (1 - 0.0066943799901413165) / 2
    * (sin(lat) / (1 - 0.0066943799901413165 * sin(lat) ^ 2)
       + ln((1 + 0.08181919084262149 * sin(lat)) / (1 - 0.08181919084262149 * sin(lat))) / (2 * 0.08181919084262149));

COMMENT ON FUNCTION wgs84_zone_area(double precision) IS
  'Area in m² on the WGS 84 ellipsoid between the equator and the parallel at latitude lat (radians), per radian of longitude.';

CREATE OR REPLACE FUNCTION lonlat_area_m2_green(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (
    WITH points AS (
      SELECT (d.path)[1] AS ring, (d.path)[2] AS n, radians(ST_X(d.geom)) AS lon, radians(ST_Y(d.geom)) AS lat
      FROM ST_DumpPoints(g) AS d
    ), edges AS (
      SELECT ring, lead(lon) OVER w - lon AS dlon, lat AS lat1, lead(lat) OVER w - lat AS dlat
      FROM points
      WINDOW w AS (PARTITION BY ring ORDER BY n)
    ), rings AS (
      SELECT ring, abs(sum(dlon * CASE
        WHEN dlat = 0 THEN wgs84_zone_area(lat1)
        WHEN abs(dlat) < 0.01 THEN 0.5 * (wgs84_zone_area(lat1 + 0.21132486540518713 * dlat) + wgs84_zone_area(lat1 + 0.7886751345948129 * dlat))
        WHEN abs(dlat) < 0.2 THEN 0.4444444444444444 * wgs84_zone_area(lat1 + 0.5 * dlat)
          + 0.2777777777777778 * (wgs84_zone_area(lat1 + 0.1127016653792583 * dlat) + wgs84_zone_area(lat1 + 0.8872983346207417 * dlat))
        ELSE 0.2844444444444444 * wgs84_zone_area(lat1 + 0.5 * dlat)
          + 0.2393143352496833 * (wgs84_zone_area(lat1 + 0.2307653449471584 * dlat) + wgs84_zone_area(lat1 + 0.7692346550528416 * dlat))
          + 0.1184634425280946 * (wgs84_zone_area(lat1 + 0.0469100770306680 * dlat) + wgs84_zone_area(lat1 + 0.9530899229693320 * dlat))
        END)) AS area
      FROM edges
      WHERE dlon <> 0
      GROUP BY ring
    )
    -- Ring 1 is the exterior; the others are holes inside it (ST_IsValid).
    SELECT coalesce(sum(CASE WHEN ring = 1 THEN area ELSE -area END), 0) FROM rings
  );

COMMENT ON FUNCTION lonlat_area_m2_green(geometry) IS
  'lonlat_area_m2 for any polygon: the authalic zone area integrated along each edge (Green''s theorem).';

CREATE OR REPLACE FUNCTION lonlat_multi_area_m2_green(g geometry) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (SELECT coalesce(sum(lonlat_area_m2_green(d.geom)), 0) FROM ST_Dump(ST_CollectionExtract(g, 3)) AS d);

COMMENT ON FUNCTION lonlat_multi_area_m2_green(geometry) IS
  'lonlat_area_m2_green summed over the polygons of any geometry.';

-- plpgsql, not SQL: the planner does not inline a SQL function whose argument appears twice in
-- its body when that argument is an expensive expression (here radians(ST_Y(ST_Centroid(g)))),
-- and a SQL function that is not inlined runs through the SQL-function executor, several times
-- slower a call than plpgsql.
CREATE OR REPLACE FUNCTION wgs84_area_density(lat double precision) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  -- a²(1-e²)·cos φ / (1 - e² sin² φ)²: d/dφ of wgs84_zone_area (sql/008's formula).
  RETURN 6378137.0 ^ 2 * (1 - 0.0066943799901413165) * cos(lat) / (1 - 0.0066943799901413165 * sin(lat) ^ 2) ^ 2;
END;
$$;

COMMENT ON FUNCTION wgs84_area_density(double precision) IS
  'Area in m² on the WGS 84 ellipsoid per square radian of longitude and latitude at latitude lat (radians).';

-- Any polygonal geometry (Polygon or MultiPolygon); lines and points have no area. One
-- expression without a subquery, and not STRICT (a CASE is not), so the planner inlines it
-- where it is called. NULL gives NULL.
CREATE OR REPLACE FUNCTION lonlat_area_m2(g geometry) RETURNS double precision
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
