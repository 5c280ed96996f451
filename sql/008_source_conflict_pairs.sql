-- Conflicts, computed once at write time. The view of sql/007 decided the rule at every read, far
-- too slow for GET /sources/?id= and listings (docs/performance.md).
-- Here every conflicting pair is stored in source_conflict_pairs, both directions, kept by the
-- triggers on sources (sql/functions/conflict_rule.sql, applied before this file), so a row
-- inserted, updated or deleted with plain SQL is held to the same rule as one written through
-- the API; the view source_conflicts (sql/functions/conflict_view.sql) reads that table.
--
-- Released (003a0b0) with the functions, the triggers and the view defined here too, and the old
-- lonlat_area_m2 renamed lonlat_area_m2_green (both are in sql/functions/area.sql now); a
-- database that applied that text counts it as this one (the migrator rewrites its checksum):
-- supersedes sha256:56f32e4593a56d9bee080f4aadd09debcb8eae8f4e3a354c18bf817252b38e9b

-- 1. sources.area_m2 computed again, by lonlat_area_m2 with its fast path for small polygons:
--    one rewrite of the table, areas equal within 1e-9. The view of sql/007 read the column, so
--    where a database still has that view it goes first (conflict_view.sql makes source_conflicts
--    again, on the pairs).
DROP VIEW IF EXISTS source_conflicts;
ALTER TABLE sources DROP COLUMN area_m2;
ALTER TABLE sources ADD COLUMN area_m2 double precision GENERATED ALWAYS AS (lonlat_area_m2(geom)) STORED;

COMMENT ON COLUMN sources.area_m2 IS 'Area in m² on the WGS 84 ellipsoid, edges straight in longitude/latitude (RFC 7946): lonlat_area_m2(geom).';

-- 2. The tolerance, one value per database. CONFLICT_TOLERANCE_M sets it (the service's migrate
--    step calls sources_set_conflict_tolerance), and every stored pair was computed with it.
CREATE TABLE source_conflict_settings (
  only_row    boolean PRIMARY KEY DEFAULT true CONSTRAINT source_conflict_settings_one_row CHECK (only_row),
  tolerance_m double precision NOT NULL
    CONSTRAINT source_conflict_settings_tolerance_range CHECK (tolerance_m >= 0 AND tolerance_m <= 1000)
);
INSERT INTO source_conflict_settings (tolerance_m) VALUES (9);

COMMENT ON TABLE source_conflict_settings IS 'The conflict tolerance every stored pair was computed with (one row). Change it with sources_set_conflict_tolerance(), which recomputes the pairs.';
COMMENT ON COLUMN source_conflict_settings.only_row IS 'Always true: the table has one row.';
COMMENT ON COLUMN source_conflict_settings.tolerance_m IS 'Metres each area is shrunk inward before two overlapping areas count as a conflict (0: any overlap of positive area).';

-- 3. The pairs. One index, and no foreign keys: a pair is written in both directions and each
--    row costs index entries and, with foreign keys, two lookups of sources; at ~10 partners per
--    new source that was most of the cost of a write. The rows exist only as
--    the triggers write them: each unordered pair once per direction (by construction:
--    a pair is found from the source that is new, or from the smaller id of two new ones), and
--    gone with either source (the delete trigger, in the deleting transaction).
CREATE TABLE source_conflict_pairs (
  source_id      text NOT NULL,
  other_id       text NOT NULL,
  overlap_m2     double precision NOT NULL,
  overlap_ratio  double precision NOT NULL,
  overlap_period tstzrange NOT NULL,
  CONSTRAINT source_conflict_pairs_not_self CHECK (source_id <> other_id)
);
-- A source's conflicts, largest first, from the index alone; also how both rows of a pair are
-- found when one source goes.
CREATE INDEX source_conflict_pairs_by_overlap ON source_conflict_pairs (source_id, overlap_m2 DESC, other_id)
  INCLUDE (overlap_ratio, overlap_period);

COMMENT ON TABLE source_conflict_pairs IS 'Storage of source_conflicts: every conflicting pair in both directions, kept by the triggers on sources. Read source_conflicts instead.';
COMMENT ON COLUMN source_conflict_pairs.source_id IS 'The source seen from.';
COMMENT ON COLUMN source_conflict_pairs.other_id IS 'The source it conflicts with.';
COMMENT ON COLUMN source_conflict_pairs.overlap_m2 IS 'Area in m² of the intersection of the two areas.';
COMMENT ON COLUMN source_conflict_pairs.overlap_ratio IS 'overlap_m2 over the area of source_id, 0–1.';
COMMENT ON COLUMN source_conflict_pairs.overlap_period IS 'The intersection of the two periods.';

-- 4. The pairs of the sources already there.
SELECT sources_recompute_conflicts();
