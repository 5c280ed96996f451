-- A source's area may be a MultiPolygon (issue 45: parcels exported from GIS tools are often
-- multipart). sources.geom and source_versions.geom take a Polygon or a MultiPolygon, kept as the
-- client sent it: the column type is geometry(Geometry, 4326) and a named CHECK says which types.
--
-- sources.area_m2 is generated from geom, and PostgreSQL cannot change the type of a column a
-- generated column uses: it goes and comes back (the same expression; both are one rewrite of
-- the table, as in sql/008). The GiST index on geom is rebuilt with the column.

ALTER TABLE sources DROP COLUMN area_m2;
ALTER TABLE sources
  ALTER COLUMN geom TYPE geometry(Geometry, 4326),
  ADD CONSTRAINT sources_geom_polygonal CHECK (ST_GeometryType(geom) IN ('ST_Polygon', 'ST_MultiPolygon'));
ALTER TABLE sources ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (lonlat_area_m2(geom)) STORED;

ALTER TABLE source_versions
  ALTER COLUMN geom TYPE geometry(Geometry, 4326),
  ADD CONSTRAINT source_versions_geom_polygonal CHECK (ST_GeometryType(geom) IN ('ST_Polygon', 'ST_MultiPolygon'));

COMMENT ON TABLE sources IS 'Registered sources: an area (Polygon or MultiPolygon, EPSG:4326) valid during a period [start_at, end_at).';
COMMENT ON COLUMN sources.geom IS 'Area as a valid, non-empty Polygon or MultiPolygon in WGS 84 (EPSG:4326), longitude/latitude, of the type the client sent (sources_geom_polygonal); altitude is dropped on input. ST_Dump(geom) gives the parts of either.';
COMMENT ON COLUMN sources.area_m2 IS 'Area in m² on the WGS 84 ellipsoid, edges straight in longitude/latitude (RFC 7946), all parts summed: lonlat_area_m2(geom).';
COMMENT ON COLUMN source_versions.geom IS 'sources.geom in this version: a Polygon or a MultiPolygon (source_versions_geom_polygonal).';
