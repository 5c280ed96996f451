-- Claims made knowingly (issue 47, point 4): a write with on_conflict=acknowledge that would start
-- conflicts with other organisations' sources must cite, for each of them, a conflict key: an
-- opaque token bound to that source's id and current version (conflict_key() in
-- sql/functions/conflict_keys.sql). The keys are made from two random secrets kept here, one row,
-- made when the database is made: nothing outside the database needs them, and nothing of a key
-- tells more than that it names one version of one source.
--
-- Rotating the secrets (UPDATE conflict_key_secret SET inner_key = …, outer_key = …) makes every
-- key handed out so far stale: a write citing one gets a 409 with the new keys, nothing worse.
CREATE TABLE conflict_key_secret (
  one       boolean PRIMARY KEY DEFAULT true
    CONSTRAINT conflict_key_secret_one_row CHECK (one),
  inner_key bytea   NOT NULL
    CONSTRAINT conflict_key_secret_inner_length CHECK (octet_length(inner_key) >= 16),
  outer_key bytea   NOT NULL
    CONSTRAINT conflict_key_secret_outer_length CHECK (octet_length(outer_key) >= 16)
);

-- gen_random_uuid() draws from the operating system's strong random source: 2 × 122 random bits each.
INSERT INTO conflict_key_secret (inner_key, outer_key) VALUES (
  decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'),
  decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

COMMENT ON TABLE conflict_key_secret IS 'The secrets conflict keys are made with (conflict_key(source_id, version)): one row. Replacing them makes every key handed out so far stale.';
COMMENT ON COLUMN conflict_key_secret.one IS 'Always true: the table holds one row.';
COMMENT ON COLUMN conflict_key_secret.inner_key IS 'Secret of the inner hash: sha256(inner_key || id:version).';
COMMENT ON COLUMN conflict_key_secret.outer_key IS 'Secret of the outer hash: sha256(outer_key || inner hash).';
