-- The counters of tile_changes (sql/016), kept by statement-level triggers on sources and on
-- source_conflict_pairs: a row's box, in Web Mercator cells, at the finest zoom 0–8 where it
-- covers at most 2 × 2 cells; every cell it covers is counted once per written row. The tiles'
-- ETags (src/tiles/tiles.repository.ts) sum the counters of every zoom around a tile.

-- A latitude as the Web Mercator row fraction from the north (0–1), clamped at ±85.0511°.
CREATE OR REPLACE FUNCTION tile_change_v(lat double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (1 - ln(tan(pi() / 4 + radians(greatest(-85.0511287798, least(85.0511287798, lat))) / 2)) / pi()) / 2
$$;

CREATE OR REPLACE FUNCTION tile_change_cells(box box2d)
RETURNS TABLE (z smallint, x integer, y integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH b AS (
    SELECT greatest(0, least(1, (ST_XMin(box) + 180) / 360)) AS u0, greatest(0, least(1, (ST_XMax(box) + 180) / 360)) AS u1,
           tile_change_v(ST_YMax(box)) AS v0, tile_change_v(ST_YMin(box)) AS v1
  ), l AS (
    SELECT b.*, least(8, greatest(0, floor(-log(2, greatest(u1 - u0, v1 - v0, 1e-9)::numeric))))::int AS lz FROM b
  )
  SELECT l.lz::smallint, gx, gy
  FROM l,
       generate_series(least((1 << l.lz) - 1, floor(l.u0 * (1 << l.lz))::int), least((1 << l.lz) - 1, floor(l.u1 * (1 << l.lz))::int)) AS gx,
       generate_series(least((1 << l.lz) - 1, floor(l.v0 * (1 << l.lz))::int), least((1 << l.lz) - 1, floor(l.v1 * (1 << l.lz))::int)) AS gy
$$;

-- Cells in (z, x, y) order, so that concurrent writers lock the counters in one order.
-- No JIT: the planner's estimate for tile_change_cells' two generate_series is far above
-- jit_above_cost, so a server with JIT on (PostgreSQL's default) compiled this statement on every
-- write, at a cost hundreds of times the statement's own (docs/performance.md).
-- PL/pgSQL, not SQL: PostgreSQL 15 plans a SQL function's statement again at every call (it
-- keeps no plan across calls), and this one runs on every write; PL/pgSQL keeps its plan for
-- the session.
CREATE OR REPLACE FUNCTION tile_changes_count(boxes box2d[]) RETURNS void
LANGUAGE plpgsql
SET jit = off
AS $$
BEGIN
  INSERT INTO tile_changes AS t (z, x, y, n)
  SELECT c.z, c.x, c.y, count(*) FROM unnest(boxes) AS b, tile_change_cells(b) AS c
  GROUP BY c.z, c.x, c.y ORDER BY c.z, c.x, c.y
  ON CONFLICT (z, x, y) DO UPDATE SET n = t.n + excluded.n;
END
$$;

-- The generic plan at once, as the conflict triggers (conflict_rule.sql): a custom plan for each
-- write's boxes was planned afresh every time.
CREATE OR REPLACE FUNCTION sources_tile_changes() RETURNS trigger
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM tile_changes_count(ARRAY(SELECT geom::box2d FROM new_rows));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM tile_changes_count(ARRAY(SELECT geom::box2d FROM old_rows));
  ELSE
    PERFORM tile_changes_count(ARRAY(SELECT geom::box2d FROM new_rows UNION ALL SELECT geom::box2d FROM old_rows));
  END IF;
  RETURN NULL;
END
$$;

-- A pair added or removed changes the `conflict` attribute of its source, wherever that source is.
CREATE OR REPLACE FUNCTION source_conflict_pairs_tile_changes() RETURNS trigger
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM tile_changes_count(ARRAY(SELECT s.geom::box2d FROM sources s WHERE s.id IN (SELECT source_id FROM new_rows)));
  ELSE
    PERFORM tile_changes_count(ARRAY(SELECT s.geom::box2d FROM sources s WHERE s.id IN (SELECT source_id FROM old_rows)));
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS sources_tile_changes_insert ON sources;
DROP TRIGGER IF EXISTS sources_tile_changes_update ON sources;
DROP TRIGGER IF EXISTS sources_tile_changes_delete ON sources;
CREATE TRIGGER sources_tile_changes_insert AFTER INSERT ON sources REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION sources_tile_changes();
CREATE TRIGGER sources_tile_changes_update AFTER UPDATE ON sources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION sources_tile_changes();
CREATE TRIGGER sources_tile_changes_delete AFTER DELETE ON sources REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION sources_tile_changes();

DROP TRIGGER IF EXISTS source_conflict_pairs_tile_changes_insert ON source_conflict_pairs;
DROP TRIGGER IF EXISTS source_conflict_pairs_tile_changes_delete ON source_conflict_pairs;
CREATE TRIGGER source_conflict_pairs_tile_changes_insert AFTER INSERT ON source_conflict_pairs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION source_conflict_pairs_tile_changes();
CREATE TRIGGER source_conflict_pairs_tile_changes_delete AFTER DELETE ON source_conflict_pairs REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION source_conflict_pairs_tile_changes();
