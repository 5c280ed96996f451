// Security headers on every response, as helmet makes them from its options. helmet's headers
// depend on its options alone, so they are made once, when the app is built, and each request
// only copies them, where @fastify/helmet builds helmet's middleware again on every request (its
// options parsed, its Content-Security-Policy serialised): a visible share of a small request's
// CPU.
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

export default fp<{ helmet: HelmetOptions }>(async (app, { helmet: options }) => {
  const headers = helmetHeaders(options)
  app.addHook('onRequest', async (_request, reply) => { void reply.headers(headers) })
}, { name: 'security-headers', fastify: '5.x' })
