-- A source's attributes (issue 45): every member of a Feature's `properties` that the service
-- does not own (start_at, end_at and the properties it adds on output), kept as the client sent
-- it, in every version. One jsonb object: an analyst reads `attributes->>'parcel_no'`, and the
-- GIN index serves containment (`attributes @> '{"land_use": "forest"}'`).
--
-- Rows there already get {} (a constant default: no table rewrite).

ALTER TABLE sources
  ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'
    CONSTRAINT sources_attributes_object CHECK (jsonb_typeof(attributes) = 'object')
    CONSTRAINT sources_attributes_size CHECK (sources_attributes_fit(attributes));

ALTER TABLE source_versions
  ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'
    CONSTRAINT source_versions_attributes_object CHECK (jsonb_typeof(attributes) = 'object');

CREATE INDEX sources_attributes_gin ON sources USING gin (attributes jsonb_path_ops);

COMMENT ON COLUMN sources.attributes IS 'The client''s attributes: the members of the Feature''s properties other than start_at, end_at and those the service adds on output, as a JSON object (at most 16 KiB as attributes::text). Query with ->> (text), -> (jsonb) and @> (containment, GIN index sources_attributes_gin).';
COMMENT ON COLUMN source_versions.attributes IS 'sources.attributes in this version.';
COMMENT ON INDEX sources_attributes_gin IS 'Containment (@>) and jsonpath (@?, @@) on the attributes: attributes @> ''{"land_use": "forest"}''.';

-- The functions whose signature grows by the attributes: sql/functions/ creates them again, later
-- in this same run (a repeatable file drops nothing: sql/README.md).
DROP FUNCTION IF EXISTS sources_as_of(timestamptz);
DROP FUNCTION IF EXISTS events_source_data(text, text, tstzrange, integer);
