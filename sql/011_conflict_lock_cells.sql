-- sources_conflict_lock, the same locks for less: ~40 µs a call where sql/008's took ~450 µs.
--
-- sql/008 listed an area's cells with generate_series in SQL. The planner takes 1,000 rows from
-- each generate_series, so for one small area it planned a hash aggregate of 40,000 groups and a
-- sort of as many, and set both up for the one or four cells there were: ~0.15–0.2 ms for each of
-- the two statements (auto_explain), ~450 µs for the call (pgbench, one client, less a
-- `SELECT 1`), every time a source was written. That was most of what conflict detection added
-- to a single POST.
--
-- Here the cells are counted and listed in plpgsql, and each level's locks are taken by one
-- statement over the array, in key order (unnest keeps the array's order). The keys, the levels
-- and the thresholds are sql/008's: test/db/conflicts.test.ts compares the locks taken with
-- sql/008's formulas for an area of each level.
CREATE OR REPLACE FUNCTION sources_conflict_lock(boxes box2d[]) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  fine constant integer := 1397048163;   -- 'SRCC': 0.01° cells, and -1 for everything
  coarse constant integer := 1397048164; -- 1° cells
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
    PERFORM pg_advisory_xact_lock(fine, -1);
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
