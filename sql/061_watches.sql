-- Watched areas (issue 47, point 5): an organisation watches an area for a period, optionally
-- with a CQL2 filter, and is told (event watch.matched) when any organisation's source starts to
-- overlap it. The code that matches is sql/functions/watches.sql.
CREATE TABLE watches (
  id           text        PRIMARY KEY DEFAULT 'wat_' || replace(gen_random_uuid()::text, '-', '')
    CONSTRAINT watches_id_format CHECK (id ~ '^wat_[0-9a-f]{32}$'),
  organisation text        NOT NULL
    CONSTRAINT watches_organisation_not_blank CHECK (btrim(organisation) <> ''),
  created_by   uuid        NOT NULL,
  geom         geometry(Geometry, 4326) NOT NULL
    CONSTRAINT watches_geom_polygonal CHECK (GeometryType(geom) IN ('POLYGON', 'MULTIPOLYGON')),
  area_m2      double precision GENERATED ALWAYS AS (lonlat_area_m2(geom)) STORED,
  period       tstzrange   NOT NULL,
  filter       text,
  filter_lang  text,
  filter_sql   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT watches_geom_valid CHECK (ST_IsValid(geom)),
  CONSTRAINT watches_geom_not_empty CHECK (NOT ST_IsEmpty(geom)),
  CONSTRAINT watches_period_start_before_end CHECK (lower(period) < upper(period)),
  CONSTRAINT watches_period_finite CHECK (NOT lower_inf(period) AND NOT upper_inf(period)),
  CONSTRAINT watches_period_bounds CHECK (lower_inc(period) AND NOT upper_inc(period)),
  CONSTRAINT watches_filter_complete CHECK ((filter IS NULL AND filter_lang IS NULL AND filter_sql IS NULL)
    OR (filter IS NOT NULL AND filter_lang IN ('cql2-text', 'cql2-json') AND filter_sql IS NOT NULL))
);

-- The watches a written source falls in: the trigger's one lookup.
CREATE INDEX watches_geom_gist ON watches USING gist (geom);
-- An organisation's watches in list order.
CREATE INDEX watches_organisation_idx ON watches (organisation, created_at, id);

COMMENT ON TABLE watches IS 'Watched areas (POST /watches): an organisation is told (event watch.matched) when any source starts to overlap the area in its period and matches its filter. Matched by sql/functions/watches.sql.';
COMMENT ON COLUMN watches.id IS '"wat_" and 32 hex digits.';
COMMENT ON COLUMN watches.organisation IS 'The watching organisation: it alone sees the watch and its events.';
COMMENT ON COLUMN watches.created_by IS 'The account that made it (accounts.id).';
COMMENT ON COLUMN watches.geom IS 'The watched area, a Polygon or MultiPolygon in EPSG:4326 (edges straight in longitude/latitude).';
COMMENT ON COLUMN watches.area_m2 IS 'Area in m² on the WGS 84 ellipsoid (lonlat_area_m2), as sources.area_m2; at most WATCH_MAX_AREA_KM2 when made through the API.';
COMMENT ON COLUMN watches.period IS 'The watched period, half-open [start_at, end_at): a source matches when its period overlaps it.';
COMMENT ON COLUMN watches.filter IS 'The CQL2 filter as sent (NULL: every source), in filter_lang.';
COMMENT ON COLUMN watches.filter_lang IS 'cql2-text or cql2-json.';
COMMENT ON COLUMN watches.filter_sql IS 'The filter as the SQL condition on a row of sources (alias sources) the service made from it, literals inlined; evaluated by watches_filter_matches.';
COMMENT ON COLUMN watches.created_at IS 'When it was made.';

-- The new event type (docs/code.md, "An event type").
ALTER TABLE events DROP CONSTRAINT events_type_known, ADD CONSTRAINT events_type_known CHECK (type IN (
  'source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended',
  'conflict.stance_changed', 'conflict.resolved', 'conflict.note_added', 'watch.matched'));
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_types_known, ADD CONSTRAINT webhook_subscriptions_types_known CHECK (
  cardinality(types) > 0 AND types <@ ARRAY['source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended',
  'conflict.stance_changed', 'conflict.resolved', 'conflict.note_added', 'watch.matched']);
