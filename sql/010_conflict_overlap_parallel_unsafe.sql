-- lonlat_conflict_overlap_m2 is PARALLEL UNSAFE. sql/008 and sql/009 declared it PARALLEL SAFE,
-- but its EXCEPTION block (the retry on a grid when GEOS gives up) opens a subtransaction, which
-- PostgreSQL forbids while a query runs in parallel. So an analyst's query over many candidates
-- failed once the planner made it parallel:
--   SELECT lonlat_conflict_overlap_m2(ST_MakeEnvelope(-180, -90, 180, 90, 4326), geom, 9) FROM sources
--   ERROR: cannot start subtransactions during a parallel operation
-- The service itself calls it only from the triggers' INSERT … SELECT, which never runs in
-- parallel. Marked unsafe, it keeps any query that calls it out of parallel plans.
ALTER FUNCTION lonlat_conflict_overlap_m2(geometry, geometry, double precision) PARALLEL UNSAFE;
