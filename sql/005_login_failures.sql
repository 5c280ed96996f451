-- Failed logins, counted per (address, e-mail) pair, per address and per e-mail in fixed windows
-- (docs/api.md, "Login limits"). In the database rather than in a process's memory, so a restart
-- does not clear them, every instance sees the same counts, and ops can clear them
-- (`account unlock`). Only failures are written; a successful login clears its own pair.
-- Released (003a0b0) with only this comment different; a database that applied that text counts
-- it as this one:
-- supersedes sha256:252df20339d4f12f09b27f8bab6908295c487c0daf55688d2783d036cd011ed4
CREATE TABLE login_failures (
  key        text        PRIMARY KEY,
  email      text,
  address    text,
  failures   integer     NOT NULL CONSTRAINT login_failures_failures_positive CHECK (failures > 0),
  window_end timestamptz NOT NULL
);

CREATE INDEX login_failures_email_idx ON login_failures (email);
CREATE INDEX login_failures_window_end_idx ON login_failures (window_end);

COMMENT ON TABLE login_failures IS 'Failed POST /token attempts in the current window, per key; expired rows are pruned as new failures arrive.';
COMMENT ON COLUMN login_failures.key IS 'pair:<address> <e-mail>, address:<address> or email:<e-mail> (e-mail lower-cased).';
COMMENT ON COLUMN login_failures.email IS 'The e-mail the key counts (pair and email keys), lower-cased: account unlock --email deletes by it.';
COMMENT ON COLUMN login_failures.address IS 'The client address the key counts (pair and address keys): account unlock --address deletes by it.';
COMMENT ON COLUMN login_failures.failures IS 'Failures since the window began.';
COMMENT ON COLUMN login_failures.window_end IS 'When this count expires; a failure after it starts a new window.';
