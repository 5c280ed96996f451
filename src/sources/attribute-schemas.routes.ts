// /organisations/{organisation}/attributes-schema: the JSON Schema an organisation declares for
// its sources' attributes (attribute-schemas.ts). Its members read it; its editors set it (admins:
// any organisation's), each change a new version, If-Match optional; /versions lists them and
// /check lists the sources written before it that it refuses.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { ApiError, errorResponses } from '../errors.js'
import { ifMatch, notModified } from '../http/preconditions.js'
import { SECURITY, WRITE_SECURITY } from '../http/security.js'
import { headerDoc } from '../schemas/primitives.js'
import { compileSchema } from './attribute-schemas.js'
import type { AttributeSchemaStore } from './attribute-schemas.store.js'
import { etagOf } from './source-feature.js'

const TAGS = ['Attributes']
const ETAG = headerDoc('W/"<version>": the schema\'s version (If-Match of PUT takes it).')
const Params = Type.Object({ organisation: Type.String({ minLength: 1, maxLength: 256, description: 'The organisation (an account\'s organisation).' }) })

const DeclaredSchema = Type.Object({
  name: Type.String(),
  type: Type.Union([Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('timestamp')], { description: 'As filters and sorts take it: timestamp for a string of format date or date-time, number for number and integer.' }),
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String())
})
const SchemaVersionSchema = Type.Object({
  organisation: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  set_by: Type.String(),
  set_at: Type.String({ format: 'date-time' }),
  schema: Type.Object({}, { additionalProperties: true, description: 'The JSON Schema (2020-12) of the attributes.' }),
  declared: Type.Array(DeclaredSchema, { description: 'Its properties of simple types: queryable and sortable, a typed column of the view sources_attributes_<organisation> and an index each.' })
}, { description: 'An organisation\'s attribute schema, one version of it.' })

const CheckSchema = Type.Object({
  version: Type.Integer({ description: 'The schema version checked against (the current one).' }),
  sources: Type.Array(Type.Object({ id: Type.String(), problems: Type.Array(Type.Object({ pointer: Type.String(), message: Type.String() })) })),
  next: Type.Optional(Type.String({ description: 'Where to go on: ?after= this id.' }))
}, { description: 'The organisation\'s sources whose attributes the current schema refuses (written before it was set), in id order.' })

const attributeSchemasRoutes: FastifyPluginAsyncTypebox<{ schemas: AttributeSchemaStore }> = async (app, { schemas }) => {
  /** The organisation named, if the caller may see it: a member's own, any for admins; else 404. */
  const visible = (request: FastifyRequest, organisation: string): void => {
    if (request.account.scope !== 'all' && request.account.organisation !== organisation) {
      throw new ApiError('NOT_FOUND', `No attribute schema of organisation ${organisation} in your scope.`)
    }
  }
  const described = (row: { organisation: string, version: number, set_by: string, set_at: string, schema: Record<string, unknown> }) =>
    ({ ...row, declared: compileSchema(row.schema, row.version).declared })

  app.get('/organisations/:organisation/attributes-schema', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getAttributesSchema',
      summary: 'The JSON Schema an organisation declared for its sources\' attributes (the current version, or ?version=)',
      tags: TAGS,
      security: SECURITY,
      params: Params,
      querystring: Type.Object({ version: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$' })) }, { additionalProperties: false }),
      response: { 200: { ...SchemaVersionSchema, headers: { ETag: ETAG } } as never, 304: Type.Null({ description: 'Not modified.' }), ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { organisation } = request.params
    visible(request, organisation)
    const row = await schemas.find(organisation, request.query.version === undefined ? undefined : Number(request.query.version))
    if (row === undefined) throw new ApiError('NOT_FOUND', request.query.version === undefined ? `Organisation ${organisation} has declared no attribute schema.` : `Organisation ${organisation} has no attribute schema version ${request.query.version}.`)
    void reply.header('etag', etagOf(row.version))
    if (notModified(request.headers['if-none-match'], row.version)) return await reply.code(304).send(null)
    return described(row)
  })

  app.put('/organisations/:organisation/attributes-schema', {
    onRequest: [app.authenticate, app.requireRole('admin', 'editor')],
    schema: {
      operationId: 'setAttributesSchema',
      summary: 'Declare (or change) the JSON Schema of an organisation\'s attributes: writes after it must satisfy it; each change is a new version',
      description: 'Editors of the organisation, and admins for any. If-Match (W/"<version>") makes the change only over that version (412 otherwise); without it the change applies over whatever is current.',
      tags: TAGS,
      security: WRITE_SECURITY,
      params: Params,
      body: Type.Object({}, { additionalProperties: true, description: 'A JSON Schema (2020-12) of the attributes object: `type: object` (or none) and `properties`, one schema per attribute; `format` date and date-time are checked.' }),
      response: { 200: { ...SchemaVersionSchema, headers: { ETag: ETAG } } as never, ...errorResponses(400, 401, 403, 404, 408, 412, 413, 415, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { organisation } = request.params
    visible(request, organisation)
    const versions = ifMatch(request.headers['if-match'], false)
    if (versions !== undefined && versions.length !== 1) throw new ApiError('VALIDATION_FAILED', 'If-Match names one version of the schema (W/"<version>").')
    const row = await schemas.set(organisation, request.body, request.account.id, versions?.[0])
    if (row === undefined) throw new ApiError('PRECONDITION_FAILED', 'The schema has changed since the version If-Match names: read it again and repeat the change. Nothing was changed.')
    void reply.header('etag', etagOf(row.version))
    return described(row)
  })

  app.get('/organisations/:organisation/attributes-schema/versions', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'getAttributesSchemaVersions',
      summary: 'Every version of an organisation\'s attribute schema: who set it and when, newest first',
      tags: TAGS,
      security: SECURITY,
      params: Params,
      response: { 200: Type.Object({ versions: Type.Array(Type.Object({ version: Type.Integer(), set_by: Type.String(), set_at: Type.String() })) }), ...errorResponses(401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    visible(request, request.params.organisation)
    return { versions: await schemas.history(request.params.organisation) }
  })

  app.get('/organisations/:organisation/attributes-schema/check', {
    onRequest: [app.authenticate],
    schema: {
      operationId: 'checkAttributesSchema',
      summary: 'The organisation\'s sources whose attributes the current schema refuses (sources written before it are not re-validated)',
      tags: TAGS,
      security: SECURITY,
      params: Params,
      querystring: Type.Object({
        after: Type.Optional(Type.String({ maxLength: 64, description: 'Go on after this source id (the answer\'s next).' })),
        limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: 'Sources listed at most, 1 to 1,000 (default 100).' }))
      }, { additionalProperties: false }),
      response: { 200: CheckSchema, ...errorResponses(400, 401, 404, 429, 500, 503) }
    }
  }, async (request) => {
    const { organisation } = request.params
    visible(request, organisation)
    const checked = await schemas.check(organisation, request.query.after ?? '', Number(request.query.limit ?? 100))
    if (checked === undefined) throw new ApiError('NOT_FOUND', `Organisation ${organisation} has declared no attribute schema.`)
    return checked
  })
}

export default attributeSchemasRoutes
