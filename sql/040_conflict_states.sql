-- Conflicts as a resource (issue 47): each pair of source_conflict_pairs is a row of conflicts,
-- with an id, each party's stance and the pair's state, until a change to either source makes the
-- overlap disappear (then it is resolved, and says how). Stance changes and notes keep their
-- history. The code that keeps these tables is sql/functions/conflict_states.sql.

-- The stances a party may take, and which change to which: the one table of transitions, read by
-- the trigger that refuses the others and by the service that names the allowed ones (409).
CREATE TABLE conflict_stance_transitions (
  from_stance text NOT NULL,
  to_stance   text NOT NULL,
  CONSTRAINT conflict_stance_transitions_pkey PRIMARY KEY (from_stance, to_stance),
  CONSTRAINT conflict_stance_transitions_known CHECK (
    from_stance IN ('open', 'acknowledged', 'disputed', 'accepted') AND to_stance IN ('acknowledged', 'disputed', 'accepted'))
);
INSERT INTO conflict_stance_transitions (from_stance, to_stance) VALUES
  ('open', 'acknowledged'),
  ('acknowledged', 'disputed'), ('acknowledged', 'accepted'),
  ('disputed', 'acknowledged'), ('disputed', 'accepted'),
  ('accepted', 'acknowledged'), ('accepted', 'disputed');

COMMENT ON TABLE conflict_stance_transitions IS 'The stance changes a party may make on a conflict (any other is refused: conflict_stance_transition).';
COMMENT ON COLUMN conflict_stance_transitions.from_stance IS 'The stance held.';
COMMENT ON COLUMN conflict_stance_transitions.to_stance IS 'A stance it may change to.';

-- One row per pair of conflicting sources, a the smaller id, b the larger. A pair that stops
-- conflicting is resolved and stays; if the two overlap again later, that is a new conflict.
CREATE TABLE conflicts (
  id              text        PRIMARY KEY DEFAULT 'cfl_' || replace(gen_random_uuid()::text, '-', '')
    CONSTRAINT conflicts_id_format CHECK (id ~ '^cfl_[0-9a-f]{32}$'),
  source_a        text        NOT NULL,
  source_b        text        NOT NULL,
  organisation_a  text        NOT NULL,
  organisation_b  text        NOT NULL,
  stance_a        text        NOT NULL DEFAULT 'open',
  stance_b        text        NOT NULL DEFAULT 'open',
  reason_a        text,
  reason_b        text,
  state           text        GENERATED ALWAYS AS (CASE
    WHEN resolved_at IS NOT NULL THEN 'resolved'
    WHEN stance_a = 'disputed' OR stance_b = 'disputed' THEN 'disputed'
    WHEN stance_a = 'open' AND stance_b = 'open' THEN 'open'
    WHEN stance_a = 'accepted' AND stance_b = 'accepted' THEN 'accepted'
    ELSE 'in_review' END) STORED,
  overlap_m2      double precision NOT NULL,
  overlap_ratio_a double precision NOT NULL,
  overlap_ratio_b double precision NOT NULL,
  overlap_period  tstzrange   NOT NULL,
  started_at      timestamptz NOT NULL DEFAULT now(),
  resolved_at     timestamptz,
  resolution      text,
  resolved_by     text,
  version         integer     NOT NULL DEFAULT 1,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT conflicts_pair_ordered CHECK (source_a < source_b),
  CONSTRAINT conflicts_stance_known CHECK (stance_a IN ('open', 'acknowledged', 'disputed', 'accepted') AND stance_b IN ('open', 'acknowledged', 'disputed', 'accepted')),
  CONSTRAINT conflicts_dispute_reason CHECK ((stance_a <> 'disputed' OR btrim(coalesce(reason_a, '')) <> '') AND (stance_b <> 'disputed' OR btrim(coalesce(reason_b, '')) <> '')),
  CONSTRAINT conflicts_reason_length CHECK (char_length(reason_a) <= 2000 AND char_length(reason_b) <= 2000),
  CONSTRAINT conflicts_resolution_known CHECK ((resolved_at IS NULL AND resolution IS NULL) OR (resolved_at IS NOT NULL AND resolution IN ('edited', 'carved', 'deleted', 'recomputed')))
);

-- At most one unresolved conflict per pair; also the party a's lookup.
CREATE UNIQUE INDEX conflicts_unresolved_pair ON conflicts (source_a, source_b) WHERE resolved_at IS NULL;
CREATE INDEX conflicts_unresolved_b ON conflicts (source_b) WHERE resolved_at IS NULL;
-- Every conflict of a source, resolved ones too (?source_id=&state=all).
CREATE INDEX conflicts_source_a ON conflicts (source_a, id);
CREATE INDEX conflicts_source_b ON conflicts (source_b, id);
-- An organisation's conflicts in page order.
CREATE INDEX conflicts_organisation_a ON conflicts (organisation_a, id);
CREATE INDEX conflicts_organisation_b ON conflicts (organisation_b, id);

COMMENT ON TABLE conflicts IS 'Conflicts as the API shows them (GET /conflicts): one row per pair of conflicting sources (source_conflict_pairs), with each party''s stance and the pair''s state; resolved when the overlap disappears. Kept by the triggers of sql/functions/conflict_states.sql.';
COMMENT ON COLUMN conflicts.id IS '"cfl_" and 32 hex digits.';
COMMENT ON COLUMN conflicts.source_a IS 'The party with the smaller source id.';
COMMENT ON COLUMN conflicts.source_b IS 'The party with the larger source id.';
COMMENT ON COLUMN conflicts.organisation_a IS 'The organisation of source_a when the conflict started.';
COMMENT ON COLUMN conflicts.organisation_b IS 'The organisation of source_b when the conflict started.';
COMMENT ON COLUMN conflicts.stance_a IS 'source_a''s party''s stance: open (not looked at), acknowledged, disputed or accepted.';
COMMENT ON COLUMN conflicts.stance_b IS 'source_b''s party''s stance.';
COMMENT ON COLUMN conflicts.reason_a IS 'Why party a disputes or accepts (required to dispute).';
COMMENT ON COLUMN conflicts.reason_b IS 'Why party b disputes or accepts (required to dispute).';
COMMENT ON COLUMN conflicts.state IS 'resolved once the overlap is gone; else disputed if either disputes, open if both are open, accepted if both accept, otherwise in_review.';
COMMENT ON COLUMN conflicts.overlap_m2 IS 'Area in m² of the intersection (the last one, once resolved).';
COMMENT ON COLUMN conflicts.overlap_ratio_a IS 'overlap_m2 over the area of source_a, 0–1.';
COMMENT ON COLUMN conflicts.overlap_ratio_b IS 'overlap_m2 over the area of source_b, 0–1.';
COMMENT ON COLUMN conflicts.overlap_period IS 'The period both claim: the intersection of the two periods.';
COMMENT ON COLUMN conflicts.started_at IS 'When the pair began to conflict.';
COMMENT ON COLUMN conflicts.resolved_at IS 'When the overlap disappeared (NULL while it lasts).';
COMMENT ON COLUMN conflicts.resolution IS 'How: edited (a source changed), carved (a carve-out), deleted (a source deleted), recomputed (a change of the rule or tolerance).';
COMMENT ON COLUMN conflicts.resolved_by IS 'Who made the change that resolved it (an e-mail, or the database role).';
COMMENT ON COLUMN conflicts.version IS '1 when detected, one more at every change of a stance or of the overlap: the ETag of the API.';
COMMENT ON COLUMN conflicts.updated_at IS 'When the current version was written.';

-- Every stance a party took, in order (the first row of each side is the detection).
CREATE TABLE conflict_stances (
  conflict_id  text        NOT NULL,
  seq          bigint      GENERATED ALWAYS AS IDENTITY,
  source_id    text        NOT NULL,
  organisation text        NOT NULL,
  from_stance  text,
  to_stance    text        NOT NULL,
  reason       text,
  version      integer     NOT NULL,
  recorded_by  text        NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT conflict_stances_pkey PRIMARY KEY (conflict_id, seq)
);

COMMENT ON TABLE conflict_stances IS 'The history of the stances on each conflict: every change, who and when (written by a trigger on conflicts).';
COMMENT ON COLUMN conflict_stances.conflict_id IS 'conflicts.id.';
COMMENT ON COLUMN conflict_stances.seq IS 'Order of the changes.';
COMMENT ON COLUMN conflict_stances.source_id IS 'The party''s source (whose stance changed).';
COMMENT ON COLUMN conflict_stances.organisation IS 'The party''s organisation.';
COMMENT ON COLUMN conflict_stances.from_stance IS 'The stance before (NULL: the one the conflict started with).';
COMMENT ON COLUMN conflict_stances.to_stance IS 'The stance after.';
COMMENT ON COLUMN conflict_stances.reason IS 'The reason given.';
COMMENT ON COLUMN conflict_stances.version IS 'The conflict''s version this change made.';
COMMENT ON COLUMN conflict_stances.recorded_by IS 'Who: an e-mail for the API, else the database role.';
COMMENT ON COLUMN conflict_stances.recorded_at IS 'When.';

-- The thread of a conflict: both parties and admins read and write it, no one else.
CREATE TABLE conflict_notes (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  conflict_id  text        NOT NULL REFERENCES conflicts (id),
  organisation text        NOT NULL,
  author       text        NOT NULL,
  body         text        NOT NULL
    CONSTRAINT conflict_notes_body_length CHECK (btrim(body) <> '' AND char_length(body) <= 4000),
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conflict_notes_conflict_idx ON conflict_notes (conflict_id, id);

COMMENT ON TABLE conflict_notes IS 'Notes on a conflict, readable by both parties and admins only.';
COMMENT ON COLUMN conflict_notes.id IS 'Order of the notes.';
COMMENT ON COLUMN conflict_notes.conflict_id IS 'conflicts.id.';
COMMENT ON COLUMN conflict_notes.organisation IS 'The writer''s organisation.';
COMMENT ON COLUMN conflict_notes.author IS 'The writer: an e-mail for the API, else the database role.';
COMMENT ON COLUMN conflict_notes.body IS 'The note, 1–4000 characters.';
COMMENT ON COLUMN conflict_notes.created_at IS 'When.';

-- The new event types (docs/code.md, "An event type").
ALTER TABLE events DROP CONSTRAINT events_type_known, ADD CONSTRAINT events_type_known CHECK (type IN (
  'source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended',
  'conflict.stance_changed', 'conflict.resolved', 'conflict.note_added'));
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_types_known, ADD CONSTRAINT webhook_subscriptions_types_known CHECK (
  cardinality(types) > 0 AND types <@ ARRAY['source.created', 'source.updated', 'source.deleted', 'conflict.started', 'conflict.ended',
  'conflict.stance_changed', 'conflict.resolved', 'conflict.note_added']);

-- The conflicts of the pairs already there, open.
INSERT INTO conflicts (source_a, source_b, organisation_a, organisation_b, overlap_m2, overlap_ratio_a, overlap_ratio_b, overlap_period)
SELECT p.source_id, p.other_id, sa.organisation, sb.organisation, p.overlap_m2, p.overlap_ratio, q.overlap_ratio, p.overlap_period
FROM source_conflict_pairs AS p
JOIN source_conflict_pairs AS q ON q.source_id = p.other_id AND q.other_id = p.source_id
JOIN sources AS sa ON sa.id = p.source_id
JOIN sources AS sb ON sb.id = p.other_id
WHERE p.source_id < p.other_id;
