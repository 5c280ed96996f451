-- The area of a source as RFC 7946 defines its shape (edges straight in longitude and latitude),
-- on the WGS 84 ellipsoid: lonlat_area_m2 (sql/functions/area.sql, applied before this file),
-- stored with every source.
--
-- Released (003a0b0) with wgs84_zone_area and lonlat_area_m2 defined here too; a database that
-- applied that text counts it as this one (the migrator rewrites its checksum):
-- supersedes sha256:2000703d48e9a7c0aafe580c707120715d7845b5ae4d44bcd8f20399f2d0dc4f

-- Stored, so reads and listings never recompute it; a table rewrite when this migration runs.
ALTER TABLE sources ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (lonlat_area_m2(geom)) STORED;

COMMENT ON COLUMN sources.area_m2 IS 'Area in m² on the WGS 84 ellipsoid, edges straight in longitude/latitude (RFC 7946): lonlat_area_m2(geom).';
