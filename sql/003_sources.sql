-- Sources: an area (polygon, WGS 84) with a half-open validity period [start_at, end_at).
-- Every data rule lives here as a named constraint, so rows written with plain SQL get the same
-- guarantees as rows written through the API; the service maps each constraint name to a status.

-- sources_period_in_window calls sources_period_window() (sql/functions/period_window.sql, applied
-- before this file).
--
-- Released (003a0b0) with that function defined here too; a database that applied that text
-- counts it as this one (the migrator rewrites its checksum):
-- supersedes sha256:cc267977202e29e18f20b30e930c0b03915dfc23b6a3333da7a679e9a45e3e15

CREATE TABLE sources (
  id           text        PRIMARY KEY
    CONSTRAINT sources_id_format CHECK (id ~ '^src_[0-9A-Za-z]{13,}$'),
  feature_id   text        NOT NULL
    CONSTRAINT sources_feature_id_length CHECK (char_length(feature_id) BETWEEN 1 AND 256),
  organisation text        NOT NULL,
  created_by   uuid        NOT NULL REFERENCES accounts (id),
  geom         geometry(Polygon, 4326) NOT NULL
    CONSTRAINT sources_geom_not_empty CHECK (NOT ST_IsEmpty(geom))
    CONSTRAINT sources_geom_valid CHECK (ST_IsValid(geom)),
  period       tstzrange   NOT NULL
    CONSTRAINT sources_period_not_empty CHECK (NOT isempty(period))
    CONSTRAINT sources_period_finite CHECK (NOT lower_inf(period) AND NOT upper_inf(period))
    CONSTRAINT sources_period_bounds CHECK (isempty(period) OR (lower_inc(period) AND NOT upper_inc(period)))
    CONSTRAINT sources_period_start_before_end CHECK (lower(period) < upper(period))
    CONSTRAINT sources_period_in_window CHECK (period <@ sources_period_window()),
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- One organisation cannot register the same client feature id twice for overlapping periods;
  -- this is also what makes a retried POST safe (409 naming the existing source).
  CONSTRAINT sources_feature_period_excl
    EXCLUDE USING gist (organisation WITH =, feature_id WITH =, period WITH &&)
);

CREATE INDEX sources_geom_gist ON sources USING gist (geom);
CREATE INDEX sources_period_gist ON sources USING gist (period);
CREATE INDEX sources_organisation_created_at_idx ON sources (organisation, created_at);

COMMENT ON TABLE sources IS 'Registered sources: an area (Polygon, EPSG:4326) valid during a period [start_at, end_at).';
COMMENT ON COLUMN sources.id IS 'Service-assigned identifier: "src_" followed by 22 base62 characters from a CSPRNG.';
COMMENT ON COLUMN sources.feature_id IS 'The client''s own identifier: features[].id of the FeatureCollection it was created from.';
COMMENT ON COLUMN sources.organisation IS 'Owning organisation: the organisation of the creating account. Only it (and admins) can see the source.';
COMMENT ON COLUMN sources.created_by IS 'Account that created the source (accounts.id).';
COMMENT ON COLUMN sources.geom IS 'Area as a valid, non-empty Polygon in WGS 84 (EPSG:4326), longitude/latitude; altitude is dropped on input.';
COMMENT ON COLUMN sources.period IS 'Validity period [start_at, end_at): finite, non-empty, inside sources_period_window().';
COMMENT ON COLUMN sources.created_at IS 'When the source was registered.';
