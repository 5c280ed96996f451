// A path the service serves, asked with another method, is a 405 with the methods it takes in
// Allow (RFC 9110 §15.5.6; OGC API – Features lists 405 for an unsupported method), not the 404
// of a path it does not serve. Fastify's router answers both as "not found", so the routes'
// paths and methods are collected as they are registered (an onRoute hook on the root applies
// to every plugin's routes) and matched here.
import type { FastifyInstance } from 'fastify'

interface Served { pattern: RegExp, methods: Set<string> }

const escape = (text: string): string => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&')

/** Collects the routes registered from now on; the result gives the methods served on a path. */
export function collectRouteMethods (app: FastifyInstance): (path: string) => string[] {
  const served = new Map<string, Served>()
  app.addHook('onRoute', (route) => {
    // ':id' is one segment, '*' anything; trailing slashes are ignored (ignoreTrailingSlash).
    const url = route.url.length > 1 ? route.url.replace(/\/$/, '') : route.url
    let entry = served.get(url)
    if (entry === undefined) {
      const source = url.split('/').map((segment) => segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : escape(segment)).join('/')
      served.set(url, entry = { pattern: new RegExp(`^${source}$`), methods: new Set() })
    }
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) entry.methods.add(method)
  })
  return (path) => {
    const trimmed = path.length > 1 ? path.replace(/\/$/, '') : path
    const methods = new Set<string>()
    for (const { pattern, methods: m } of served.values()) if (pattern.test(trimmed)) m.forEach((x) => methods.add(x))
    return [...methods].sort()
  }
}
