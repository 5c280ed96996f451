-- OGC API items by period within one organisation (`datetime` for a viewer or an editor).
-- Without it the planner counts a period's matches through sources_feature_period_excl, where
-- feature_id between the two columns scatters periods over the whole index; through this one the
-- count is index-only and an order of magnitude faster (docs/performance.md).
-- Released (003a0b0) with only this comment different; a database that applied that text counts
-- it as this one:
-- supersedes sha256:9e31f7a98bb0454dd8859c03e632ba12f66e99206ee5d580f92704410b03690c
CREATE INDEX sources_organisation_period_gist ON sources USING gist (organisation, period);

COMMENT ON INDEX sources_organisation_period_gist IS 'Period search within an organisation (OGC API items datetime, numberMatched): index-only counts.';
