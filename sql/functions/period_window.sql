-- before: 003_sources.sql (its constraint sources_period_in_window calls sources_period_window)
-- The acceptable window for sources.period: sources_period_in_window (sql/003) checks every row
-- against it, and the service reads it for its 422 messages. A function rather than a literal
-- in the constraint so that both read the same value.
--
-- To change the window: edit it here and add a numbered migration that checks the rows again
-- (ALTER TABLE sources DROP CONSTRAINT sources_period_in_window, ADD CONSTRAINT … CHECK
-- (period <@ sources_period_window())); a CHECK constraint is not re-checked when the function it
-- calls changes.

CREATE OR REPLACE FUNCTION sources_period_window() RETURNS tstzrange
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN tstzrange('1900-01-01 00:00:00+00', '2100-01-01 00:00:00+00', '[)');

COMMENT ON FUNCTION sources_period_window() IS 'Acceptable window for sources.period; outside it the API answers 422.';
