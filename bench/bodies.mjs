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
