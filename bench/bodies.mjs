// The polygons the benchmark sends, shared by the load generator (as GeoJSON) and the pgbench
// scripts (as the EWKB the service would make of them), so both insert the same geometries.

/** A closed ring of `vertices` positions (the first repeated last) around (cx, cy). */
export function ring (vertices, cx, cy) {
  const r = []
  for (let i = 0; i < vertices - 1; i++) {
    const a = (2 * Math.PI * i) / (vertices - 1)
    r.push([+(cx + 0.001 * Math.cos(a)).toFixed(7), +(cy + 0.001 * Math.sin(a)).toFixed(7)])
  }
  r.push(r[0])
  return [r]
}

/** The i-th polygon of a collection: on a 300-wide grid of 0.01° cells. */
export const polygon = (vertices, i = 0) => ring(vertices, (i % 300) * 0.01, Math.floor(i / 300) * 0.01)

// Where a request's polygons go. Since conflicts (sql/008) every insert looks for the sources it
// overlaps in space and time, so a benchmark that posted the same polygons in every request
// measured the worst case of that rule, and worse each time: the n-th copy of one area is
// compared with the n − 1 before it (inserting the 500th copy of one polygon took 38 ms, the
// 1,500th 203 ms). Each request's polygons are moved instead to a block of their own at
// random, north of the seeded grid (bench/setup.mjs seeds −15…15° of latitude): n polygons
// (0.001° about their cell's corner) fill ⌈n / 300⌉ rows of the 300-wide grid, a block of
// min(n, 300) × 0.01° by ⌈n / 300⌉ × 0.01°. Blocks of one polygon number 35,400 × 6,000, so the
// ~120,000 single-polygon inserts of a `make bench` (service, naive handler and pgbench, at the
// rates of 2026-11-23) land on a block taken before ~35 times: that many conflicting pairs,
// each one overlay.

/** Blocks of a request of `n` polygons: [columns, rows, width °, height °]. */
export function blocks (n) {
  const width = Math.min(n, 300) * 0.01
  const height = Math.ceil(n / 300) * 0.01
  return [Math.floor(354 / width), Math.floor(60 / height), width, height]
}

/** A random offset [dx, dy] for a request of `n` polygons (its block's south-west corner, from (0, 0)). */
export function placement (n) {
  const [columns, rows, width, height] = blocks(n)
  return [-177 + Math.floor(Math.random() * columns) * width, 20 + Math.floor(Math.random() * rows) * height]
}

/** polygon(vertices, i) moved by [dx, dy]. */
export const placedPolygon = (vertices, i, [dx, dy]) => polygon(vertices, i).map((r) => r.map(([x, y]) => [+(x + dx).toFixed(7), +(y + dy).toFixed(7)]))

/**
 * The same offsets in a pgbench script: `\set` lines that pick the block, and the SQL
 * expressions of dx and dy for ST_Translate.
 */
export function pgbenchPlacement (n) {
  const [columns, rows, width, height] = blocks(n)
  return {
    set: `\\set bx random(0, ${columns - 1})\n\\set by random(0, ${rows - 1})`,
    dx: `(-177 + :bx * ${width.toFixed(2)})`,
    dy: `(20 + :by * ${height.toFixed(2)})`
  }
}
