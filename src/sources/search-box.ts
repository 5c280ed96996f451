// The boxes a bbox is searched with: pure arithmetic, shared by the items parameters and the
// listing's SQL (sources.listing.ts).

/**
 * A query box in CRS84, never across the antimeridian (searchBoxes splits one that is).
 * `shortcut`: wide enough for the inner-box shortcut (intersectsBox).
 */
export interface SearchBox { west: number, south: number, east: number, north: number, shortcut: boolean }

// A shortcut for the exact test: a source whose bounding box lies inside the query box
// intersects it, without ST_Intersects. Bounding boxes are float4, rounded outward by up to
// 1.1e-5° at ±180, so the shortcut uses the box shrunk by 1e-4°; sources near its edge get the
// exact test (docs/performance.md: it halves the cost of a dense window).
export const INNER_MARGIN = 1e-4

/** The boxes of a bbox (CRS84; west > east crosses the antimeridian: two boxes). */
export function searchBoxes (west: number, south: number, east: number, north: number): SearchBox[] {
  const box = (w: number, e: number): SearchBox => ({ west: w, south, east: e, north, shortcut: e - w > 2 * INNER_MARGIN && north - south > 2 * INNER_MARGIN })
  return west <= east ? [box(west, east)] : [box(west, 180), box(-180, east)]
}

