-- The trigger functions of the first events (a2bd671), one per table, which formatted their SQL
-- on every write: events_sources_changed and events_conflict_pairs_changed. Since 5b25f6b each
-- trigger has a function of its own (sql/functions/events.sql), which dropped these two itself;
-- a repeatable file drops nothing any more (sql/README.md), so the drop is here.
--
-- CASCADE: on a database that still has them, the triggers of sql/functions/events.sql still call
-- them when this file runs (that file runs after every numbered one and is pending there, its text
-- having changed since). The cascade drops those triggers; events.sql, later in the same run and
-- the same transaction, creates them again on their new functions. Elsewhere this is a no-op.
DROP FUNCTION IF EXISTS events_sources_changed() CASCADE;
DROP FUNCTION IF EXISTS events_conflict_pairs_changed() CASCADE;
