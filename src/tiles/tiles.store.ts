// The one door from the tile routes to storage: a tile's change counters (for its ETag) and the
// tile itself with its counters in one snapshot, at most maxBytes: a tile over it is made again with half the features it held,
// largest first, down to a floor. PostGIS makes the MVT where it can (ST_AsMVT); the embedded backend's
// PostGIS has no protobuf-c, so there the query gives the features in tile units and
// mvt-encode.ts writes the same tile. cachedTileStore keeps drawn tiles in memory with the
// counters they were drawn at, and answers one again only while the database's counters are
// those: the counters grow with every write in or around the tile, on whichever instance.
import type { Kysely } from 'kysely'
import { LRUCache } from 'lru-cache'
import type { Counter } from 'prom-client'
import type { Database, Scope } from '../db/database.js'
import type { Tile } from './tile-matrix.js'
import { EXTENT } from './tile-matrix.js'
import { encodeMvt } from './mvt-encode.js'
import { Batcher } from '../db/batcher.js'
import { CONFLICT_TILE_PROPERTIES, type ConflictTileInput, conflictTile, conflictTileFeatures } from './conflict-tiles.repository.js'
import { type TileInput, hasMvt, tileChanges, tileFeaturesQuery, tileQuery, tilesChanges } from './tiles.repository.js'

export interface TileStore {
  /** Grows with every write that touches the tile or its buffer. */
  changes: (tile: Tile) => Promise<string>
  /** The MVT bytes (empty when no source is drawn) and the tile's changes as of those bytes. */
  tile: (input: TileInput) => Promise<{ mvt: Buffer, changes: string }>
  /**
   * The tile as drawn before, when its counters are still those it was drawn at (`changes`: the
   * counters already read for this request; else read here when there is a tile to check);
   * undefined when it has to be drawn.
   */
  cached: (input: TileInput, changes?: string) => Promise<{ mvt: Buffer, changes: string } | undefined>
  /** West, south, east, north (CRS84) of the sources in a scope; null when it has none. */
  extent: (scope: Scope) => Promise<Bbox | null>
  /**
   * The layer "conflicts" of a tile (empty when none is drawn): never kept in memory, since a
   * stance changes no counter of tile_changes (the route's ETag hashes the bytes).
   */
  conflicts: (input: ConflictTileInput) => Promise<Buffer>
}

export type Bbox = [number, number, number, number]

const MIN_FEATURES = 100

/** Tiles whose counters one statement reads at most. */
const CHANGES_BATCH = 64

/**
 * `extent` is the sources store's (app.ts hands it over), so the extent is read as the
 * collection's is, replicas included. With `readsInFlight` (DB_FAST_PATH), the counters of
 * concurrent requests are read together once that many reads are running (db/batcher.ts: never
 * by a statement that started before the request), each tile once a batch.
 */
export function plainTileStore (db: Kysely<Database>, { maxBytes, extent, readsInFlight }: { maxBytes: number, extent: TileStore['extent'], readsInFlight?: number }): TileStore {
  const changes = readsInFlight === undefined ? (tile: Tile) => tileChanges(db, tile) : batchedChanges(db, readsInFlight)
  let inPostgis: Promise<boolean> | undefined
  const draw = async (input: TileInput): Promise<{ mvt: Buffer, features: number, changes: string }> => {
    inPostgis ??= hasMvt(db)
    if (await inPostgis) {
      const row = (await tileQuery(db, input)).rows[0]
      return { mvt: row?.mvt ?? Buffer.alloc(0), features: row?.features ?? 0, changes: row?.changes ?? '0' }
    }
    // Counters first, then the rows: a write between them makes the next ETag differ, never
    // keeps an old one on new bytes.
    const changes = await tileChanges(db, input.tile)
    const rows = (await tileFeaturesQuery(db, input)).rows
    return { mvt: encodeMvt(rows, EXTENT), features: rows.length, changes }
  }
  return {
    extent,
    changes,
    conflicts: async (input) => {
      inPostgis ??= hasMvt(db)
      if (await inPostgis) return (await conflictTile(db, input)) ?? Buffer.alloc(0)
      return encodeMvt(await conflictTileFeatures(db, input), EXTENT, 'conflicts', CONFLICT_TILE_PROPERTIES)
    },
    cached: async () => undefined,
    tile: async (input) => {
      let maxFeatures = input.maxFeatures
      for (;;) {
        const { mvt, features, changes } = await draw({ ...input, maxFeatures })
        if (mvt.length <= maxBytes || maxFeatures <= MIN_FEATURES) return { mvt, changes }
        // Half of what the tile held, not of the cap: a tile of 3,000 features over the bound
        // under a cap of 10,000 is drawn next with 1,500, not again with the same 3,000.
        maxFeatures = Math.max(MIN_FEATURES, Math.floor(Math.min(maxFeatures, features) / 2))
      }
    }
  }
}

function batchedChanges (db: Kysely<Database>, readsInFlight: number): (tile: Tile) => Promise<string> {
  const batcher = new Batcher<Tile, string>(async (tiles) => {
    if (tiles.length === 1) return [await tileChanges(db, tiles[0] as Tile)]
    // A tile asked by several requests of the batch is read once.
    const keys = tiles.map((t) => `${t.z}/${t.x}/${t.y}`)
    const distinct = [...new Map(tiles.map((t, i) => [keys[i] as string, t])).entries()]
    const read = await tilesChanges(db, distinct.map(([, t]) => t))
    const byKey = new Map(distinct.map(([key], i) => [key, read[i] as string]))
    return keys.map((key) => byKey.get(key) as string)
  }, { maxInFlight: readsInFlight, maxWeight: CHANGES_BATCH })
  return (tile) => batcher.submit(tile)
}

interface Drawn { mvt: Buffer, changes: string }

/** Bytes an entry holds besides its tile: the key, the counters, the objects around them. */
const ENTRY_OVERHEAD = 200

/**
 * `store` with its drawn tiles kept, at most `maxBytes` of them (least recently used out first),
 * keyed by scope, filter and tile, each with the counters it was drawn at. A write in or around a
 * tile grows its counters (sql/functions/tile_changes.sql) and so makes its next request draw
 * afresh, here and on every other instance; a write elsewhere leaves it served from memory.
 */
export function cachedTileStore (store: TileStore, { maxBytes, lookups, onCache }: {
  maxBytes: number
  /** Counted with result "hit" or "miss". */
  lookups: Counter<'result'>
  /** Given the cache's size, for the metrics. */
  onCache: (read: () => { bytes: number, entries: number }) => void
}): TileStore {
  const cache = new LRUCache<string, Drawn>({
    maxSize: maxBytes,
    sizeCalculation: (drawn, key) => drawn.mvt.length + 2 * key.length + drawn.changes.length + ENTRY_OVERHEAD
  })
  onCache(() => ({ bytes: cache.calculatedSize, entries: cache.size }))
  const keyOf = ({ scope, filter, tile, maxFeatures }: TileInput): string => JSON.stringify([scope, filter, tile.z, tile.x, tile.y, maxFeatures])
  return {
    ...store,
    cached: async (input, changes) => {
      const key = keyOf(input)
      const kept = cache.get(key)
      // Nothing kept: drawn without reading the counters first, so a cold tile costs what it did.
      if (kept === undefined) return undefined
      const now = changes ?? await store.changes(input.tile)
      if (kept.changes !== now) return undefined
      lookups.inc({ result: 'hit' })
      return kept
    },
    tile: async (input) => {
      const drawn = await store.tile(input)
      lookups.inc({ result: 'miss' })
      const key = keyOf(input)
      const kept = cache.peek(key)
      // Counters only grow: a draw that finished late does not replace a newer one.
      if (kept === undefined || BigInt(kept.changes) <= BigInt(drawn.changes)) cache.set(key, drawn)
      return drawn
    }
  }
}
