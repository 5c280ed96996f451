-- Every version of every source: sources holds the current one (with its version number and when
-- it last changed), source_versions every one ever held, written by the triggers of
-- sql/functions/source_versions.sql, so a change made with plain SQL is versioned as one made
-- through the API. A deleted source leaves sources; its versions stay. source_purges records the
-- erasures (the CLI's `source purge`), the one way versions go.

ALTER TABLE sources
  ADD COLUMN version integer NOT NULL DEFAULT 1
    CONSTRAINT sources_version_positive CHECK (version >= 1),
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
-- The sources already there were last changed when created. Their triggers stay out of this one
-- rewrite: nothing about their conflicts changes.
ALTER TABLE sources DISABLE TRIGGER USER;
UPDATE sources SET updated_at = created_at;
ALTER TABLE sources ENABLE TRIGGER USER;

COMMENT ON COLUMN sources.version IS 'Version number: 1 when created, one more at every change (set by the trigger sources_versions_bump). The ETag of the API.';
COMMENT ON COLUMN sources.updated_at IS 'When the current version was written (created_at for version 1).';

CREATE TABLE source_versions (
  source_id    text        NOT NULL,
  version      integer     NOT NULL,
  operation    text        NOT NULL
    CONSTRAINT source_versions_operation_known CHECK (operation IN ('create', 'update', 'delete')),
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  recorded_by  text        NOT NULL,
  feature_id   text        NOT NULL,
  organisation text        NOT NULL,
  created_by   uuid        NOT NULL,
  geom         geometry(Polygon, 4326) NOT NULL,
  period       tstzrange   NOT NULL,
  created_at   timestamptz NOT NULL,
  CONSTRAINT source_versions_pkey PRIMARY KEY (source_id, version)
);

COMMENT ON TABLE source_versions IS 'Every version of every source, current, earlier and deleted, written by the triggers on sources. Read a past state with sources_as_of(timestamptz).';
COMMENT ON COLUMN source_versions.source_id IS 'sources.id; kept after the source is deleted, so an id is never used again.';
COMMENT ON COLUMN source_versions.version IS '1 for the create, one more per update; a delete is a version of its own holding the last state.';
COMMENT ON COLUMN source_versions.operation IS 'create, update or delete: the write that made this version.';
COMMENT ON COLUMN source_versions.recorded_at IS 'Transaction time of the write (now()).';
COMMENT ON COLUMN source_versions.recorded_by IS 'Who wrote it: the account''s e-mail for the API, else the database role (current_user).';
COMMENT ON COLUMN source_versions.feature_id IS 'sources.feature_id in this version.';
COMMENT ON COLUMN source_versions.organisation IS 'sources.organisation in this version.';
COMMENT ON COLUMN source_versions.created_by IS 'sources.created_by (accounts.id).';
COMMENT ON COLUMN source_versions.geom IS 'sources.geom in this version.';
COMMENT ON COLUMN source_versions.period IS 'sources.period in this version.';
COMMENT ON COLUMN source_versions.created_at IS 'sources.created_at (when the source was first registered).';

-- Version 1 of every source already there.
INSERT INTO source_versions (source_id, version, operation, recorded_at, recorded_by, feature_id, organisation, created_by, geom, period, created_at)
SELECT s.id, 1, 'create', s.created_at, current_user, s.feature_id, s.organisation, s.created_by, s.geom, s.period, s.created_at
FROM sources AS s;

CREATE TABLE source_purges (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_id   text        NOT NULL,
  organisation text       NOT NULL,
  versions    integer     NOT NULL,
  reason      text        NOT NULL
    CONSTRAINT source_purges_reason_not_blank CHECK (btrim(reason) <> ''),
  purged_by   text        NOT NULL DEFAULT current_user,
  purged_at   timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE source_purges IS 'Audit of erasures: a source and all its versions removed for good (source purge).';
COMMENT ON COLUMN source_purges.id IS 'Sequence number of the erasure.';
COMMENT ON COLUMN source_purges.source_id IS 'The source erased (no other data of it is kept).';
COMMENT ON COLUMN source_purges.organisation IS 'Its organisation.';
COMMENT ON COLUMN source_purges.versions IS 'How many versions were removed.';
COMMENT ON COLUMN source_purges.reason IS 'Why, as given to the CLI.';
COMMENT ON COLUMN source_purges.purged_by IS 'Who: the operator named to the CLI, else the database role.';
COMMENT ON COLUMN source_purges.purged_at IS 'When.';
