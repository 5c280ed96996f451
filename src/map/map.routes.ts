// The map page (GET /map): a small web page, served by the service itself, that shows an
// organisation's sources on a Leaflet map, drawn from the vector tiles at every zoom, with
// sign-in, a period filter, details and delete, and GeoJSON upload. Plain HTML, CSS and one
// script from src/map/public/, Leaflet and Leaflet.VectorGrid from npm: no external request but
// the optional basemap (MAP_TILE_URL). Every URL in the page is
// relative, so it works behind a path prefix. The page needs no token; the data it shows does.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import type { MapConfig } from '../config.js'
import { errorResponses } from '../errors.js'
import { noBody, sentAs } from '../http/openapi.js'
import { headerDoc } from '../schemas/primitives.js'
import { RESERVED_NAMES } from '../sources/source-properties.js'

const PUBLIC_DIR = fileURLToPath(new URL('../../src/map/public/', import.meta.url))
const packageDist = (name: string): string => join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), 'dist')
const LEAFLET_DIR = packageDist('leaflet')
const VECTORGRID_DIR = packageDist('leaflet.vectorgrid')

/** The origin the basemap's tiles come from, as a CSP source ({s} subdomains as a wildcard). */
export function tileOrigin (tileUrl: string): string | undefined {
  if (tileUrl === 'none') return undefined
  const match = /^(https?:)\/\/([^/]+)/.exec(tileUrl)
  if (match === null) return undefined
  return `${match[1] as string}//${(match[2] as string).replace(/\{s\}/g, '*').replace(/\{[a-z]\}/g, '*')}`
}

const mapRoutes: FastifyPluginAsync<{ config: MapConfig }> = async (app, { config }) => {
  const notLimited = { rateLimit: false }
  const tags = ['Map page']
  // Sent by @fastify/static, which also answers conditional and range requests.
  const html = (description: string, headers?: Parameters<typeof sentAs>[3]) => sentAs('text/html', Type.String(), description, headers)
  app.get('/map', {
    config: notLimited,
    schema: {
      operationId: 'getMapPage',
      summary: 'The map page (HTML): sign in, see your sources on a map',
      tags,
      security: [],
      response: {
        200: html('The page.'),
        206: html('The byte range asked for (Range).', { 'Content-Range': headerDoc('The range sent, of the whole length.') }),
        304: noBody('Not modified since the ETag or date given (If-None-Match, If-Modified-Since).'),
        308: noBody('Asked for as /map/ (with a slash): the page is /map, where its relative links resolve.', { Location: headerDoc('The page, relative: ../map?<the query>.') }),
        ...errorResponses(412, 416, 500)
      }
    }
  }, async (request, reply) => {
    // The router ignores a trailing slash, but a browser resolves the page's relative links
    // (map/static/…) against it: /map/ would load /map/map/static/…, so it is sent to /map.
    const [path, query] = request.url.split(/\?(.*)/s) as [string, string | undefined]
    if (path.endsWith('/')) return reply.redirect(`../map${query === undefined ? '' : `?${query}`}`, 308)
    return reply.type('text/html; charset=utf-8').sendFile('index.html', PUBLIC_DIR)
  })
  app.get('/map/config.json', {
    config: notLimited,
    schema: {
      operationId: 'getMapConfig',
      summary: 'The map page\'s settings: its basemap, and which properties are the service\'s',
      tags,
      security: [],
      response: {
        200: Type.Object({
          tileUrl: Type.String(),
          attribution: Type.String(),
          serviceProperties: Type.Array(Type.String(), { description: 'The names of the service\'s own properties: every other member of a source\'s properties is an attribute.' })
        }, { description: 'The basemap\'s tile URL template (or none) and attribution, and the service\'s property names.' }),
        ...errorResponses(500)
      }
    }
  }, async () => ({
    tileUrl: config.MAP_TILE_URL,
    attribution: config.MAP_TILE_ATTRIBUTION,
    serviceProperties: [...RESERVED_NAMES]
  }))
  await app.register(fastifyStatic, { root: PUBLIC_DIR, prefix: '/map/static/', decorateReply: true, index: false, schemaHide: true })
  await app.register(fastifyStatic, { root: LEAFLET_DIR, prefix: '/map/leaflet/', decorateReply: false, index: false, schemaHide: true })
  await app.register(fastifyStatic, { root: VECTORGRID_DIR, prefix: '/map/vectorgrid/', decorateReply: false, index: false, schemaHide: true })
}

export default mapRoutes
