-- sortby=start_at (and -start_at), the order a client paging through an organisation's sources by
-- time asks for: without this index each page sorted every source of the organisation to take the
-- first limit + 1 (a top-N of up to 10,001 over all of them); with it a page, and each page after
-- a cursor (the row comparison (lower(period), id) > (…)), reads limit + 1 rows of the index.
-- Other sort keys use the bounded top-N (docs/performance.md); a declared attribute's key its own
-- expression index (attribute-schemas.repository.ts).
CREATE INDEX sources_organisation_start_idx ON sources (organisation, lower(period), id);

COMMENT ON INDEX sources_organisation_start_idx IS
  'Listings of one organisation ordered by start_at (sortby=start_at or -start_at) with keyset paging: (organisation, lower(period), id).';
