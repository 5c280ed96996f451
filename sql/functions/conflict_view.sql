-- source_conflicts: every conflicting pair of sources, in both directions (A→B and B→A), with the
-- overlap as seen from source_id. The pairs are decided at write time by the rule of
-- conflict_rule.sql and stored in source_conflict_pairs (sql/008); read them here. After the
-- numbered files: it reads a table of sql/008.

CREATE OR REPLACE VIEW source_conflicts AS
  SELECT source_id, other_id, overlap_m2, overlap_ratio, overlap_period FROM source_conflict_pairs;

COMMENT ON VIEW source_conflicts IS
  'Pairs of sources that claim the same land for the same time: periods overlap and the areas still intersect after each is shrunk inward by sources_conflict_tolerance_m() metres. Both directions; across organisations. Kept at write time by the triggers on sources.';
COMMENT ON COLUMN source_conflicts.source_id IS 'The source seen from.';
COMMENT ON COLUMN source_conflicts.other_id IS 'The source it conflicts with.';
COMMENT ON COLUMN source_conflicts.overlap_m2 IS 'Area in m² of the intersection of the two areas (edges straight in lon/lat, WGS 84 ellipsoid).';
COMMENT ON COLUMN source_conflicts.overlap_ratio IS 'overlap_m2 over the area of source_id, 0–1.';
COMMENT ON COLUMN source_conflicts.overlap_period IS 'The period both claim: the intersection of the two periods, [start, end).';
