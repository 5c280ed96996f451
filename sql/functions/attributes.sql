-- before: 025_source_attributes.sql (its constraint sources_attributes_size calls sources_attributes_fit)
--
-- A source's attributes: the members of a Feature's `properties` the service does not own,
-- kept as one jsonb object (sources.attributes). Two functions:
--
-- 1. sources_attributes_fit: the one size rule, used by the constraints of sources and
--    source_versions and by the service's diagnosis of a refused write.
-- 2. jsonb_merge_patch: RFC 7396 merge patch of a jsonb value, so that a PATCH of the attributes
--    is one UPDATE that merges into what is stored (no read, no lost update).

-- 1. At most 16 KiB (16,384 bytes of UTF-8) as PostgreSQL writes the object's JSON text
--    (attributes::text: a space after each ':' and ','). Members and nesting are not counted
--    apart: a 16 KiB text cannot hold more than a few thousand.
CREATE OR REPLACE FUNCTION sources_attributes_fit(attributes jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN octet_length(attributes::text) <= 16384;

COMMENT ON FUNCTION sources_attributes_fit(jsonb) IS
  'Whether a source''s attributes are within the size limit: 16,384 bytes of their JSON text as PostgreSQL writes it (attributes::text).';

-- 2. RFC 7396: an object patch merges member by member (a null member removes the target's,
--    recursively into nested objects); any other patch value replaces the target. NULL patch (SQL
--    NULL, not JSON null) leaves the target as it is, so an UPDATE can pass NULL for "no change".
CREATE OR REPLACE FUNCTION jsonb_merge_patch(target jsonb, patch jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
  result jsonb;
  member record;
BEGIN
  IF patch IS NULL THEN RETURN target; END IF;
  IF jsonb_typeof(patch) <> 'object' THEN RETURN patch; END IF;
  result := CASE WHEN jsonb_typeof(target) = 'object' THEN target ELSE '{}'::jsonb END;
  FOR member IN SELECT key, value FROM jsonb_each(patch) LOOP
    IF jsonb_typeof(member.value) = 'null' THEN
      result := result - member.key;
    ELSE
      result := jsonb_set(result, ARRAY[member.key], jsonb_merge_patch(result -> member.key, member.value), true);
    END IF;
  END LOOP;
  RETURN result;
END
$$;

COMMENT ON FUNCTION jsonb_merge_patch(jsonb, jsonb) IS
  'RFC 7396 JSON merge patch: the target with the patch merged in (null members remove, objects merge recursively, other values replace). A SQL NULL patch returns the target.';

-- 3. An attribute's value as one SQL type, NULL when the attribute is absent or of another JSON
--    type (sources written before a schema was declared are not re-validated). The filters of the
--    API and the indexes of declared attributes (sources_attribute_<type>_<name>) use these very
--    expressions, so an index serves the filter; the name is a literal in both.
CREATE OR REPLACE FUNCTION sources_attribute_text(attributes jsonb, name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(attributes -> name) = 'string' THEN attributes ->> name END;

CREATE OR REPLACE FUNCTION sources_attribute_number(attributes jsonb, name text) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(attributes -> name) = 'number' THEN (attributes -> name)::double precision END;

CREATE OR REPLACE FUNCTION sources_attribute_boolean(attributes jsonb, name text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(attributes -> name) = 'boolean' THEN (attributes -> name)::boolean END;

-- A date (YYYY-MM-DD: its first instant, midnight UTC, as the API reads a date) or an RFC 3339
-- date-time with Z or an offset; anything else NULL. Immutable: a text with its offset names one
-- instant whatever the session's TimeZone. PARALLEL RESTRICTED: its EXCEPTION block is a
-- subtransaction, which a parallel worker cannot start, so a CREATE INDEX on it (a declared date
-- attribute's) that PostgreSQL would build with workers failed ("cannot start subtransactions
-- during a parallel operation"); PostgreSQL 15 has no pg_input_is_valid to test the text without one.
CREATE OR REPLACE FUNCTION sources_attribute_timestamp(attributes jsonb, name text) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL RESTRICTED
AS $$
DECLARE
  v text := CASE WHEN jsonb_typeof(attributes -> name) = 'string' THEN attributes ->> name END;
BEGIN
  IF v ~ '^\d{4}-\d{2}-\d{2}$' THEN
    v := v || 'T00:00:00Z';
  ELSIF v IS NULL OR v !~ '^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$' THEN
    RETURN NULL;
  END IF;
  RETURN v::timestamptz;
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
  RETURN NULL;
END
$$;

COMMENT ON FUNCTION sources_attribute_text(jsonb, text) IS 'An attribute''s value when it is a JSON string, else NULL.';
COMMENT ON FUNCTION sources_attribute_number(jsonb, text) IS 'An attribute''s value when it is a JSON number, as double precision, else NULL.';
COMMENT ON FUNCTION sources_attribute_boolean(jsonb, text) IS 'An attribute''s value when it is a JSON boolean, else NULL.';
COMMENT ON FUNCTION sources_attribute_timestamp(jsonb, text) IS 'An attribute''s value when it is a date (midnight UTC) or an RFC 3339 date-time with an offset, else NULL.';
