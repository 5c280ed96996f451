// The map page as served: the page and its assets (Leaflet and Leaflet.VectorGrid from npm, no
// CDN), the security headers (a CSP without inline script or style, nosniff, frames denied), the
// basemap's origin in img-src, the landing page's link to it, and items asked for as HTML sent to
// it with the query.
import t from 'tap'
import { build } from '../helper.js'
import { RESERVED_NAMES } from '../../src/sources/source-properties.js'

const { app } = await build(t)

t.test('the page, its script and Leaflet, with strict security headers', async (t) => {
  const page = await app.inject({ method: 'GET', url: '/map' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const csp = String(page.headers['content-security-policy'])
  t.match(csp, /script-src 'self'(;|$)/, 'scripts only from the service')
  t.notMatch(csp, /unsafe-inline|unsafe-eval/)
  t.match(csp, /frame-ancestors 'none'/)
  t.equal(page.headers['x-content-type-options'], 'nosniff')
  t.equal(page.headers['x-frame-options'], 'DENY')
  t.notMatch(page.body, /<script>|<script [^>]*>[^<]|\son[a-z]+=/i, 'no inline script or handler in the page')
  for (const src of page.body.match(/(?<=(src|href)=")[^"]+(?=")/g) ?? []) {
    if (src.startsWith('data:')) continue
    t.notMatch(src, /^(https?:)?\/\//, `${src}: relative, nothing from elsewhere`)
    t.equal((await app.inject({ method: 'GET', url: `/${src}` })).statusCode, 200, `${src} is served`)
  }
  for (const prefix of ['/map/static/', '/map/leaflet/', '/map/vectorgrid/']) {
    t.equal((await app.inject({ method: 'GET', url: `${prefix}no-such-file.css` })).statusCode, 404, `${prefix}: a file that is not there is a 404, not a 405 naming GET`)
  }
  t.match(page.body, /map\/leaflet\/leaflet\.js.*map\/vectorgrid\/Leaflet\.VectorGrid\.bundled\.min\.js.*map\/static\/map\.js/s, 'Leaflet, then VectorGrid, then the page\'s script')
  const config = await app.inject({ method: 'GET', url: '/map/config.json' })
  t.same(config.json(), { tileUrl: 'none', attribution: '', serviceProperties: [...RESERVED_NAMES] })
})

t.test('/map/ (a trailing slash) is sent to /map with its query, relatively, where the page\'s relative links resolve', async (t) => {
  for (const [url, location] of [['/map/', '../map'], ['/map/?bbox=1,2,3,4&datetime=2024-01-01T00:00:00Z/..', '../map?bbox=1,2,3,4&datetime=2024-01-01T00:00:00Z/..']] as const) {
    const res = await app.inject({ method: 'GET', url })
    t.same([res.statusCode, res.headers.location, res.body], [308, location, ''], url)
    t.equal(new URL(String(res.headers.location), `http://h${url}`).pathname, '/map', 'resolves to /map')
  }
  t.equal((await app.inject({ method: 'GET', url: '/map?x=1' })).statusCode, 200, '/map itself is the page')
})

t.test('every response carries the same security headers: a page, JSON, an error', async (t) => {
  const page = await app.inject({ method: 'GET', url: '/map' })
  const expected = ['content-security-policy', 'cross-origin-opener-policy', 'origin-agent-cluster', 'referrer-policy', 'x-content-type-options',
    'x-dns-prefetch-control', 'x-download-options', 'x-frame-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']
  const security = (headers: Record<string, unknown>) => Object.fromEntries(expected.map((name) => [name, headers[name]]))
  t.ok(expected.every((name) => typeof page.headers[name] === 'string'), 'helmet\'s headers')
  t.equal(page.headers['strict-transport-security'], undefined, 'no HSTS (TLS ends in front of the service)')
  for (const url of ['/conformance', '/collections', '/no-such-route']) {
    const res = await app.inject({ method: 'GET', url })
    t.same(security(res.headers), security(page.headers), `${url} (${res.statusCode})`)
  }
})

t.test('a basemap\'s origin is allowed for images, and nothing else', async (t) => {
  const { app: withTiles } = await build(t, { MAP_TILE_URL: 'https://{s}.tiles.example.org/{z}/{x}/{y}.png' })
  const csp = String((await withTiles.inject({ method: 'GET', url: '/map' })).headers['content-security-policy'])
  t.match(csp, /img-src 'self' data: https:\/\/\*\.tiles\.example\.org(;|$)/)
  t.match(csp, /connect-src 'self'(;|$)/)
})

t.test('the landing page links the map; items asked for as HTML get the page for people, without a token', async (t) => {
  const landing = (await app.inject({ method: 'GET', url: '/' })).json() as { links: Array<{ rel: string, type: string, href: string }> }
  t.match(landing.links.find((l) => l.rel === 'service-doc'), { type: 'text/html', href: /\/map$/ })
  const browser = await app.inject({ method: 'GET', url: '/collections/sources/items?bbox=1,2,3,4&datetime=2024-01-01T00:00:00Z/..', headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } })
  t.equal(browser.statusCode, 200, 'no token needed: the page signs in')
  t.match(browser.headers['content-type'], /^text\/html/)
  const f = await app.inject({ method: 'GET', url: '/collections/sources/items?f=html&limit=5' })
  t.same([f.statusCode, String(f.headers['content-type']).startsWith('text/html')], [200, true])
  const gdal = await app.inject({ method: 'GET', url: '/collections/sources/items', headers: { accept: 'application/geo+json, application/json' } })
  t.equal(gdal.statusCode, 401, 'GeoJSON clients still need their token')
  // Every negotiation by q-value, then by the order of the header (@fastify/accepts).
  const asked = async (accept: string) => (await app.inject({ method: 'GET', url: '/collections/sources/items', headers: { accept } })).statusCode
  t.equal(await asked('text/html;q=0.1, application/json'), 401, 'JSON preferred by q-value: not the page')
  t.equal(await asked('application/json;q=0.5, text/html'), 200, 'HTML preferred by q-value')
  t.equal(await asked('application/json, text/html'), 401, 'a tie goes to the first the client names')
  t.equal(await asked('text/html, application/json'), 200)
  t.equal(await asked('*/*'), 401, 'a wildcard is JSON')
  t.equal(await asked('text/html;q=0, */*'), 401, 'q=0 refuses HTML')
})
