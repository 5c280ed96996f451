// The conflicts as an OGC collection: the document /collections lists beside the sources and
// /collections/conflicts answers. Served in CRS84 only; no extent (it would mean computing every
// overlap in the caller's scope).
import { CRS84 } from '../sources/crs.js'

const GEOJSON = 'application/geo+json'

export function conflictsCollection (base: string) {
  return {
    id: 'conflicts' as const,
    title: 'Conflicts',
    description: 'Pairs of sources that claim the same land for the same time and involve your organisation (admins: all): the overlap, both parties\' stances and the pair\'s state. Unresolved ones unless state= says otherwise.',
    itemType: 'feature' as const,
    crs: [CRS84],
    storageCrs: CRS84,
    links: [
      { href: `${base}/collections/conflicts`, rel: 'self', type: 'application/json', title: 'This collection' },
      { href: `${base}/collections/conflicts/items`, rel: 'items', type: GEOJSON, title: 'The conflicts' },
      { href: `${base}/collections/conflicts/queryables`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/queryables', type: 'application/schema+json', title: 'What a filter may name' },
      { href: `${base}/collections/conflicts/tiles/WebMercatorQuad/{tileMatrix}/{tileRow}/{tileCol}`, rel: 'item', type: 'application/vnd.mapbox-vector-tile', title: 'The overlaps of your unresolved conflicts as vector tiles (layer "conflicts")' }
    ]
  }
}
