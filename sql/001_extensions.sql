-- Extensions the schema needs: PostGIS for geometry, btree_gist so the exclusion constraint on
-- sources can combine equality on text columns with overlap on a tstzrange.
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS btree_gist;
