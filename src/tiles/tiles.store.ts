// The one door from the tile routes to storage: a tile's change counters (for its ETag) and the
// tile itself, at most maxBytes: a tile over it is made again with half the features, largest
// first, down to a floor. PostGIS makes the MVT where it can (ST_AsMVT); the embedded backend's
// PostGIS has no protobuf-c, so there the query gives the features in tile units and
// mvt-encode.ts writes the same tile.
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import type { Tile } from './tile-matrix.js'
import { EXTENT } from './tile-matrix.js'
import { encodeMvt } from './mvt-encode.js'
import { type TileInput, hasMvt, tileChanges, tileFeaturesQuery, tileQuery } from './tiles.repository.js'

export interface TileStore {
  /** Grows with every write that touches the tile or its buffer. */
  changes: (tile: Tile) => Promise<string>
  /** The MVT bytes; empty when no source is drawn. */
  tile: (input: TileInput) => Promise<Buffer>
}

const MIN_FEATURES = 100

export function plainTileStore (db: Kysely<Database>, { maxBytes }: { maxBytes: number }): TileStore {
  let inPostgis: Promise<boolean> | undefined
  const draw = async (input: TileInput): Promise<Buffer> => {
    inPostgis ??= hasMvt(db)
    if (await inPostgis) return (await tileQuery(db, input)).rows[0]?.mvt ?? Buffer.alloc(0)
    return encodeMvt((await tileFeaturesQuery(db, input)).rows, EXTENT)
  }
  return {
    changes: (tile) => tileChanges(db, tile),
    tile: async (input) => {
      let maxFeatures = input.maxFeatures
      for (;;) {
        const mvt = await draw({ ...input, maxFeatures })
        if (mvt.length <= maxBytes || maxFeatures <= MIN_FEATURES) return mvt
        maxFeatures = Math.max(MIN_FEATURES, Math.floor(maxFeatures / 2))
      }
    }
  }
}
