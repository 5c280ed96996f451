-- Accounts that may obtain tokens. Managed by ops with the CLI (`account add|list|disable|passwd`).
CREATE TABLE accounts (
  id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  email               text        NOT NULL
    CONSTRAINT accounts_email_format CHECK (email ~ '^[^@[:space:]]+@[^@[:space:]]+$' AND char_length(email) <= 320),
  password_hash       text        NOT NULL
    CONSTRAINT accounts_password_hash_scrypt CHECK (password_hash LIKE 'scrypt$%'),
  role                text        NOT NULL
    CONSTRAINT accounts_role_known CHECK (role IN ('admin', 'editor', 'viewer')),
  organisation        text        NOT NULL
    CONSTRAINT accounts_organisation_not_blank CHECK (btrim(organisation) <> '' AND char_length(organisation) <= 256),
  disabled            boolean     NOT NULL DEFAULT false,
  password_changed_at timestamptz NOT NULL DEFAULT now(),
  created_at          timestamptz NOT NULL DEFAULT now()
);

-- E-mail addresses are unique regardless of case; login looks them up through this index.
CREATE UNIQUE INDEX accounts_email_lower_key ON accounts (lower(email));

COMMENT ON TABLE accounts IS 'Accounts allowed to obtain API tokens (POST /token). Managed with the CLI, never through the API.';
COMMENT ON COLUMN accounts.id IS 'Account identifier; the "sub" claim of its tokens.';
COMMENT ON COLUMN accounts.email IS 'Login e-mail address, unique case-insensitively (index accounts_email_lower_key).';
COMMENT ON COLUMN accounts.password_hash IS 'scrypt$N$r$p$salt$hash (base64); never a plain or fast hash.';
COMMENT ON COLUMN accounts.role IS 'admin: everything in every organisation; editor: create, read, delete in its organisation; viewer: read only.';
COMMENT ON COLUMN accounts.organisation IS 'Organisation the account belongs to; sources it creates belong to this organisation.';
COMMENT ON COLUMN accounts.disabled IS 'A disabled account cannot log in, and its tokens stop working within the account cache TTL (at most 60 s).';
COMMENT ON COLUMN accounts.password_changed_at IS 'Tokens issued before this instant are rejected.';
COMMENT ON COLUMN accounts.created_at IS 'When the account was created.';
