-- Claims made knowingly (issue 47, point 4; the secrets: sql/060_conflict_keys.sql). After the
-- numbered files (it reads their tables).
--
-- 1. A conflict key        conflict_key(source_id, version)
-- 2. The check at write    sources_knowingly_check, triggers sources_knowingly_insert, _update
--
-- A write made knowingly names its keys in the transaction setting source_registry.conflict_keys
-- (a JSON array of keys; the service sets it, SET LOCAL, in the writing transaction, and an
-- analyst may too). Unset or empty: an ordinary write, nothing is checked.

-- 1. The key of one version of one source: 'ck_' and 40 hex digits of
--    sha256(outer_key || sha256(inner_key || 'id:version')), two independent secrets nested as in
--    HMAC (no length extension). It names that version and nothing else: whoever has not been
--    told it cannot make it.
CREATE OR REPLACE FUNCTION conflict_key(source_id text, version integer) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN (SELECT 'ck_' || left(encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(source_id || ':' || version::text, 'UTF8'))), 'hex'), 40)
          FROM conflict_key_secret AS k);

COMMENT ON FUNCTION conflict_key(text, integer) IS
  'The conflict key of a source at a version: what a write made knowingly (on_conflict=acknowledge) must cite to start a conflict with it.';

-- 2. After the pairs of the written sources are written (sources_conflicts_…) and before their
--    conflicts start (sources_resolution_…): triggers of one event fire in name order. The pairs
--    this statement starts are those without an unresolved conflict yet. Each with a source of
--    another organisation needs that source's key at its current version; when any is not cited,
--    the write is refused (check_violation naming sources_conflict_keys, DETAIL the keys needed as
--    JSON: [{"source_id", "key"}]), and the whole transaction with it. Otherwise the organisation
--    of the written sources is named in source_registry.acknowledged_by, so that conflicts_sync
--    starts their side of each new pair acknowledged.
--
--    The locks the pairs were written under (conflict_rule.sql, section 4) are held to the end of
--    the transaction: a source written meanwhile in the same place is either seen here or waits
--    and then sees this one, and a change that moves the other source's land waits for the lock
--    on everything. So of two claimants citing the same key, the second finds the first's source
--    and is told its key too.
CREATE OR REPLACE FUNCTION sources_knowingly_check() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
  setting text := nullif(current_setting('source_registry.conflict_keys', true), '');
  cited text[];
  needed jsonb;
  complete boolean;
BEGIN
  IF setting IS NULL THEN RETURN NULL; END IF;
  cited := ARRAY(SELECT jsonb_array_elements_text(setting::jsonb));
  SELECT jsonb_agg(jsonb_build_object('source_id', o.id, 'key', o.key) ORDER BY o.id), coalesce(bool_and(o.key = ANY (cited)), true)
  INTO needed, complete
  FROM (SELECT DISTINCT o.id, conflict_key(o.id, o.version) AS key
        FROM new_rows AS n
        JOIN source_conflict_pairs AS p ON p.source_id = n.id
        JOIN sources AS o ON o.id = p.other_id
        WHERE o.organisation <> n.organisation
          AND NOT EXISTS (SELECT 1 FROM conflicts AS c
                          WHERE c.resolved_at IS NULL AND c.source_a = least(n.id, o.id) AND c.source_b = greatest(n.id, o.id))) AS o;
  IF NOT complete THEN
    RAISE EXCEPTION 'this write would start conflicts with other organisations'' sources: cite the keys of all of them'
      USING ERRCODE = 'check_violation', CONSTRAINT = 'sources_conflict_keys', DETAIL = needed::text;
  END IF;
  PERFORM set_config('source_registry.acknowledged_by', (SELECT min(n.organisation) FROM new_rows AS n), true);
  RETURN NULL;
END;
$$;

COMMENT ON FUNCTION sources_knowingly_check() IS
  'Trigger: a write made knowingly (source_registry.conflict_keys set) must cite the conflict key of every other organisation''s source it starts a conflict with; its new conflicts then start acknowledged by the writer.';

CREATE OR REPLACE TRIGGER sources_knowingly_insert AFTER INSERT ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_knowingly_check();
CREATE OR REPLACE TRIGGER sources_knowingly_update AFTER UPDATE ON sources
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sources_knowingly_check();

COMMENT ON TRIGGER sources_knowingly_insert ON sources IS 'Checks the conflict keys of a write made knowingly (on_conflict=acknowledge).';
COMMENT ON TRIGGER sources_knowingly_update ON sources IS 'Checks the conflict keys of a change made knowingly (on_conflict=acknowledge).';
