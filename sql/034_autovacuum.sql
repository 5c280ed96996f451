-- Autovacuum for the write-heavy tables (issue 49), as table storage parameters: PostgreSQL's
-- defaults wait for 20 % of a table to be dead (10 %, 20 % of inserts) before vacuuming it, which
-- on a registry of a million sources is 200,000 dead rows of sources and of events at a time.
-- Figures, and the command that measures them: docs/performance.md (bench/vacuum.mjs).
--   sources, source_conflict_pairs: updated and deleted rows; vacuum at 2 % (5 %) dead.
--   events: inserted, and removed from the front by the retention; vacuum at 2 % dead or inserted.
--   source_versions: only inserted; vacuumed at 2 % new rows, so its visibility map stays current
--     (index-only scans, no freeze storm later).
--   tile_changes: a few thousand counters, each updated by every write near it. Its pages are
--     kept half empty (fillfactor 50), so an update stays on its page (HOT: n is not indexed) and
--     is pruned without a vacuum; vacuumed at 1,000 dead rows whatever the size.
-- The embedded backend (PGlite) runs no autovacuum: these change nothing there.
ALTER TABLE sources SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE source_conflict_pairs SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE source_versions SET (autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE tile_changes SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
