-- API keys: long-lived secrets an account makes for its GIS clients (QGIS, GDAL, scripts), sent
-- as a bearer token, as the password of HTTP Basic, or as the client secret of OAuth2 client
-- credentials. A key is shown once, when it is made: `srk_<id>_<secret>`. Only a SHA-256 of the
-- secret is kept (the secret has 256 bits of entropy, so a slow password hash buys nothing).
-- A revoked key keeps its row, for the record of who revoked it and when.
CREATE TABLE api_keys (
  id            text        PRIMARY KEY
    CONSTRAINT api_keys_id_format CHECK (id ~ '^[0-9A-Za-z]{22}$'),
  account_id    uuid        NOT NULL
    CONSTRAINT api_keys_account_fk REFERENCES accounts (id) ON DELETE CASCADE,
  name          text        NOT NULL
    CONSTRAINT api_keys_name_not_blank CHECK (btrim(name) <> '' AND char_length(name) <= 100),
  scope         text        NOT NULL
    CONSTRAINT api_keys_scope_known CHECK (scope IN ('read', 'write')),
  secret_sha256 bytea       NOT NULL
    CONSTRAINT api_keys_secret_sha256_length CHECK (octet_length(secret_sha256) = 32),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  last_used_at  timestamptz,
  revoked_at    timestamptz,
  revoked_by    uuid
    CONSTRAINT api_keys_revoked_by_fk REFERENCES accounts (id) ON DELETE SET NULL,
  CONSTRAINT api_keys_expires_after_created CHECK (expires_at > created_at),
  CONSTRAINT api_keys_revoked_by_needs_revoked_at CHECK (revoked_by IS NULL OR revoked_at IS NOT NULL)
);

-- An account's keys in force: what GET /api-keys lists and the per-account limit counts.
CREATE INDEX api_keys_account_active_idx ON api_keys (account_id, created_at) WHERE revoked_at IS NULL;

COMMENT ON TABLE api_keys IS 'API keys of accounts (POST /api-keys): a bearer token, an HTTP Basic password or an OAuth2 client secret. The key itself is never stored.';
COMMENT ON COLUMN api_keys.id IS 'The key''s public identifier: the key reads srk_<id>_<secret>; the OAuth2 client_id.';
COMMENT ON COLUMN api_keys.account_id IS 'The account the key acts for; it never has more rights than this account, and stops working when the account is disabled.';
COMMENT ON COLUMN api_keys.name IS 'The owner''s label for the key ("qgis laptop").';
COMMENT ON COLUMN api_keys.scope IS 'read: the account''s reads only (a viewer at most); write: the account''s role as it is.';
COMMENT ON COLUMN api_keys.secret_sha256 IS 'SHA-256 of the key''s secret part (43 base62 characters, 256 bits); compared in constant time.';
COMMENT ON COLUMN api_keys.created_at IS 'When the key was made.';
COMMENT ON COLUMN api_keys.expires_at IS 'After this instant the key is refused; NULL: it does not expire.';
COMMENT ON COLUMN api_keys.last_used_at IS 'When the key last authenticated a request, to within about API_KEY_LAST_USED_INTERVAL_SECONDS (written at most that often per key and instance).';
COMMENT ON COLUMN api_keys.revoked_at IS 'When the key was revoked (DELETE /api-keys/?id=); refused on every instance within ACCOUNT_CACHE_TTL_SECONDS after.';
COMMENT ON COLUMN api_keys.revoked_by IS 'The account that revoked it: its owner or an admin.';
