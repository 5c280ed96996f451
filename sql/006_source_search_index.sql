-- OGC API items by period within one organisation (`datetime` for a viewer or an editor).
-- Measured on 1,000,000 rows (bench/NOTES.md): counting a 10-day interval's 27,400 matches took
-- 103 ms through sources_feature_period_excl (the planner's choice: feature_id between the two
-- columns scatters periods over the whole index) and 9 ms index-only through this one.
CREATE INDEX sources_organisation_period_gist ON sources USING gist (organisation, period);

COMMENT ON INDEX sources_organisation_period_gist IS 'Period search within an organisation (OGC API items datetime, numberMatched): index-only counts.';
