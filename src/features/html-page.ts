// The text/html answer of the landing page, the collections, the collection, the items and one
// item (f=html, or a browser's Accept): one page shell, the same for each, whose script
// (src/map/public/browse.js) reads the same URL as JSON with the map page's session (the token
// kept in sessionStorage by the map page) and shows it: a table of the properties, a small
// Leaflet map, links to the other formats; without a session it offers the sign-in. A browser's
// address bar sends no token, so the shell is sent before authentication and holds no data. It
// loads only the service's own files, under the map page's Content-Security-Policy.
import type { FastifyReply, FastifyRequest } from 'fastify'

const JSON_TYPES = ['application/geo+json', 'application/json']

/**
 * Whether the client asks for HTML: f=html, or (without f) an Accept that prefers text/html to
 * any JSON, by q-value, then by how specific, then by its order; JSON on a tie of wildcards.
 */
export function wantsHtml (request: FastifyRequest): boolean {
  const f = (request.query as Record<string, unknown> | undefined)?.f
  if (f !== undefined) return f === 'html'
  const accept = request.headers.accept
  if (accept === undefined || accept.trim() === '') return false
  return request.accepts().type([...JSON_TYPES, 'text/html']) === 'text/html'
}

/** The page shell; `root` is the relative way back to the service's root (behind a path prefix too). */
export function htmlShell (root: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Source Registry</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="${root}map/leaflet/leaflet.css">
  <link rel="stylesheet" href="${root}map/static/browse.css">
  <script src="${root}map/leaflet/leaflet.js" defer></script>
  <script src="${root}map/static/browse.js" data-root="${root}" id="browse-script" defer></script>
</head>
<body>
  <header class="bar"><h1><a href="${root}?f=html">Source Registry</a></h1><span id="who"></span><a href="${root}map">Map</a></header>
  <main id="content" aria-live="polite"><p>Loading…</p></main>
  <noscript><p>This page shows the data with a script; the same URL with f=json gives it as JSON.</p></noscript>
</body>
</html>
`
}

/** An onRequest hook: sends the shell for an HTML request, before authentication. */
export async function sendHtmlPage (request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!wantsHtml(request)) return
  const path = request.url.split('?')[0] ?? '/'
  const depth = path.split('/').length - 2
  const root = depth <= 0 ? './' : '../'.repeat(depth)
  await reply.type('text/html; charset=utf-8').header('vary', 'accept').send(htmlShell(root))
}
