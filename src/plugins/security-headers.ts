// Security headers on every response (the map page is HTML): a strict Content-Security-Policy
// with no inline script or style, nosniff, frames denied. Images may also come from the
// basemap's tile server (MAP_TILE_URL), and nothing else from anywhere.
// They are helmet's, made from its options. helmet's headers depend on its options alone, so they
// are made once, when the app is built, and each request only copies them, where @fastify/helmet
// builds helmet's middleware again on every request (its options parsed, its
// Content-Security-Policy serialised): a visible share of a small request's CPU.
import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/** The headers helmet sets with these options (lower-case names). */
export function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const response = {
    setHeader: (name: string, value: unknown) => { headers[name.toLowerCase()] = String(value) },
    // X-Powered-By, which neither Node nor Fastify sends.
    removeHeader: () => {}
  }
  let failed: unknown
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (err?: unknown) => { failed = err })
  if (failed !== undefined) throw failed
  return headers
}

/** helmet's options: `tileOrigin` is the basemap tile server's origin (map.routes.ts tileOrigin), if any. */
export function helmetOptions (tileOrigin: string | undefined): HelmetOptions {
  return {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:', ...(tileOrigin !== undefined ? [tileOrigin] : [])],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"]
      }
    },
    frameguard: { action: 'deny' },
    // HSTS belongs to whatever terminates TLS in front of the service, not to a plain-HTTP app.
    strictTransportSecurity: false,
    // The API is read by other origins' scripts (with CORS) and by GIS clients: no CORP/COEP.
    crossOriginResourcePolicy: false,
    crossOriginEmbedderPolicy: false
  }
}

export default fp<{ tileOrigin: string | undefined }>(async (app, { tileOrigin }) => {
  const headers = helmetHeaders(helmetOptions(tileOrigin))
  app.addHook('onRequest', async (_request, reply) => { void reply.headers(headers) })
}, { name: 'security-headers', fastify: '5.x' })
