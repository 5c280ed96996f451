-- Versions of sources, kept by the database so that a change made with plain SQL (psql's UPDATE
-- or DELETE) is versioned exactly as one made through the API:
--
-- 1. Who writes               sources_recorded_by
-- 2. The version number       sources_versions_bump (BEFORE UPDATE, each row)
-- 3. The history              sources_versions_record (each statement)
-- 4. A past instant           sources_as_of
--
-- The tables are sql/017_source_versions.sql's. No `-- before:` line: this file runs after every
-- numbered file, as it must, since its triggers write 017's table.

-- 1. The service names the acting account in the transaction-local setting
--    source_registry.account (set_config(…, true)): '@' and its accounts.id, or '@created_by' for
--    inserts (of several accounts at once: each row's created_by). Recorded as the account's
--    e-mail. Any other value is recorded as it is; without one, the database role.
CREATE OR REPLACE FUNCTION sources_recorded_by(created_by uuid) RETURNS text
  LANGUAGE plpgsql STABLE
AS $$
DECLARE
  who text := nullif(current_setting('source_registry.account', true), '');
  account uuid;
BEGIN
  IF who = '@created_by' THEN
    account := created_by;
  ELSIF who ~ '^@[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
    account := substr(who, 2)::uuid;
  ELSE
    RETURN coalesce(who, current_user::text);
  END IF;
  RETURN coalesce((SELECT a.email FROM accounts AS a WHERE a.id = account), current_user::text);
END;
$$;

COMMENT ON FUNCTION sources_recorded_by(uuid) IS
  'Who is writing a source: the e-mail of the account the setting source_registry.account names (@<accounts.id>, or @created_by), else the setting itself, else current_user.';

-- 2. Every change is a new version, whoever makes it: the number goes up by one and updated_at is
--    the transaction time, whatever the UPDATE said about them.
CREATE OR REPLACE FUNCTION sources_versions_bump() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  NEW.version := OLD.version + 1;
  NEW.updated_at := now();
  RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER sources_versions_bump BEFORE UPDATE ON sources
  FOR EACH ROW EXECUTE FUNCTION sources_versions_bump();

COMMENT ON TRIGGER sources_versions_bump ON sources IS 'Makes every update a new version: version + 1, updated_at = now().';

-- 3. The history, one statement at a time (transition tables, as the conflict triggers). A delete
--    is a version of its own that keeps the last state. One function for the three triggers:
--    plpgsql plans a branch only when it runs, so each names the transition table it has.
CREATE OR REPLACE FUNCTION sources_versions_record() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO source_versions (source_id, version, operation, recorded_at, recorded_by, feature_id, organisation, created_by, geom, period, created_at, area_m2)
    SELECT o.id, o.version + 1, 'delete', now(), sources_recorded_by(o.created_by), o.feature_id, o.organisation, o.created_by, o.geom, o.period, o.created_at, o.area_m2
    FROM old_rows AS o;
  ELSE
    INSERT INTO source_versions (source_id, version, operation, recorded_at, recorded_by, feature_id, organisation, created_by, geom, period, created_at, area_m2)
    SELECT n.id, n.version, CASE TG_OP WHEN 'INSERT' THEN 'create' ELSE 'update' END, now(), sources_recorded_by(n.created_by),
      n.feature_id, n.organisation, n.created_by, n.geom, n.period, n.created_at, n.area_m2
    FROM new_rows AS n;
  END IF;
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION sources_versions_record() IS 'Writes the versions of the rows an INSERT, UPDATE or DELETE on sources wrote (statement-level, transition tables).';

CREATE OR REPLACE TRIGGER sources_versions_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_versions_record();
CREATE OR REPLACE TRIGGER sources_versions_update AFTER UPDATE ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_versions_record();
CREATE OR REPLACE TRIGGER sources_versions_delete AFTER DELETE ON sources
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_versions_record();

COMMENT ON TRIGGER sources_versions_insert ON sources IS 'Records version 1 of inserted sources in source_versions.';
COMMENT ON TRIGGER sources_versions_update ON sources IS 'Records the new version of updated sources in source_versions.';
COMMENT ON TRIGGER sources_versions_delete ON sources IS 'Records the deletion of sources (with their last state) in source_versions.';

-- 4. The sources as they were at an instant: for each, its latest version recorded by then,
--    unless that was its deletion. Columns as sources' own, so an analyst joins it like the table.
CREATE OR REPLACE FUNCTION sources_as_of(at timestamptz)
  RETURNS TABLE (id text, feature_id text, organisation text, created_by uuid, geom geometry(Geometry, 4326),
                 period tstzrange, created_at timestamptz, version integer, updated_at timestamptz)
  LANGUAGE sql STABLE
AS $$
  SELECT v.source_id, v.feature_id, v.organisation, v.created_by, v.geom, v.period, v.created_at, v.version, v.recorded_at
  FROM (SELECT DISTINCT ON (w.source_id) w.*
        FROM source_versions AS w
        WHERE w.recorded_at <= at
        ORDER BY w.source_id, w.version DESC) AS v
  WHERE v.operation <> 'delete'
$$;

COMMENT ON FUNCTION sources_as_of(timestamptz) IS
  'The sources as held at an instant (their latest version recorded by then, deleted ones left out), with the columns of sources.';
