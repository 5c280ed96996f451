-- One organisation's sources in id order: the items' default order (and sortby=id), a bulk
-- export's ranges and the cuts between them (sources.listing.ts). Without this index each read
-- walked the primary key through every other organisation's sources between its own, filtering
-- them out: a page of a small organisation read about limit ÷ its share of the table rows
-- (docs/performance.md, the bulk export).
CREATE INDEX sources_organisation_id_idx ON sources (organisation, id);

COMMENT ON INDEX sources_organisation_id_idx IS
  'Listings and bulk exports of one organisation in id order (the items'' default order, sortby=id, the export''s ranges): (organisation, id).';
