-- Each version keeps its area, as sources keeps the current one (a generated column), so an
-- as-of read does not compute it: lonlat_area_m2 of a polygon runs Green's theorem through a SQL
-- function that PostgreSQL plans on every call, ~0.3 ms, four times the rest of the read.
-- Written by the history triggers (sql/functions/source_versions.sql) from the row's own
-- area_m2. Versions recorded before this migration keep NULL: filling them would hold
-- source_versions (and so every write to sources) for minutes on a large history; a read
-- computes theirs, coalesce(area_m2, lonlat_area_m2(geom)).
ALTER TABLE source_versions ADD COLUMN area_m2 double precision;

COMMENT ON COLUMN source_versions.area_m2 IS 'The version''s geodesic area in m² (sources.area_m2 when it was written); NULL for versions recorded before sql/019: coalesce(area_m2, lonlat_area_m2(geom)).';
