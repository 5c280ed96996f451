-- Per-area change counters for the tiles' ETags (OGC API – Tiles, src/tiles/). Every write to
-- sources (and to the conflict pairs, whose existence is a tile attribute) adds to the counters of
-- the cells its rows' boxes cover, in the writing transaction (sql/functions/tile_changes.sql), so
-- every instance of the service sees the change on its next tile request. A tile's ETag hashes
-- the counters of the cells around it; tiles elsewhere keep theirs.
CREATE TABLE tile_changes (
  z smallint NOT NULL CONSTRAINT tile_changes_z_range CHECK (z BETWEEN 0 AND 8),
  x integer  NOT NULL,
  y integer  NOT NULL,
  n bigint   NOT NULL,
  CONSTRAINT tile_changes_pkey PRIMARY KEY (z, x, y)
);

COMMENT ON TABLE tile_changes IS 'How many written rows of sources touched each Web Mercator cell; read for the ETags of vector tiles. A row''s box is counted at the finest zoom (0–8) where it covers at most 2 × 2 cells.';
COMMENT ON COLUMN tile_changes.z IS 'Zoom of the cell (WebMercatorQuad, 0–8).';
COMMENT ON COLUMN tile_changes.x IS 'Column of the cell, from the west.';
COMMENT ON COLUMN tile_changes.y IS 'Row of the cell, from the north.';
COMMENT ON COLUMN tile_changes.n IS 'Rows written in the cell so far; only grows.';
