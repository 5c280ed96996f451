// Ajv's schema-validation issues → error details with JSON pointers into the request
// ("/features/2/geometry/type"; "?id" for a query parameter). A route may name the code its body
// failures carry and add context to each pointer (the sources routes name the feature).
import { Ajv } from 'ajv'
import type { TSchema } from '@sinclair/typebox'
import type { ErrorCode, ErrorDetail } from '../errors.js'

/**
 * How request bodies are checked (Fastify's Ajv, app.ts, and whatever checks a body outside a
 * route, such as the CLI's import). No type coercion: "1" is not a number and 1 is not a string
 * in a GeoJSON body. The discriminator tells a Polygon from a MultiPolygon by its type
 * (sources.schema.ts AreaSchema, an OpenAPI oneOf that TypeBox's own Value.Check cannot read);
 * verbose gives its issue the alternatives, named in the message.
 */
export const AJV_OPTIONS = { coerceTypes: false, removeAdditional: false, discriminator: true, verbose: true } as const

/** Extra fields for a detail at `pointer` into `body` (e.g. which feature it is in). */
export type DescribePointer = (pointer: string, body: unknown) => Partial<ErrorDetail>

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The code a route's body-schema failures carry (default VALIDATION_FAILED). */
    bodyValidationCode?: ErrorCode
    /** Adds context to each body-validation detail. */
    describeBodyPointer?: DescribePointer
    /** The body media types the route parses, named in its 415 (default application/json). */
    mediaTypes?: string[]
  }
}

export interface ValidationIssue { instancePath: string, message?: string, keyword: string, params: Record<string, unknown>, parentSchema?: unknown }

/**
 * An anyOf (a string or a number) fails with one issue per alternative at its path and then its
 * own: one detail, "must be a string or a number", says it.
 */
function collapseAnyOf (issues: ValidationIssue[], body: unknown): ValidationIssue[] {
  const anyOf = new Set(issues.filter((i) => i.keyword === 'anyOf').map((i) => i.instancePath))
  if (anyOf.size === 0) return issues
  return issues.flatMap((issue) => {
    if (!anyOf.has(issue.instancePath)) return [issue]
    if (issue.keyword !== 'anyOf') return []
    const alternatives = issues.filter((i) => i.instancePath === issue.instancePath && i.keyword !== 'anyOf')
      .map((i) => i.keyword === 'type' ? `a ${String(i.params.type)}` : i.keyword === 'const' ? JSON.stringify(i.params.allowedValue) : i.message ?? 'valid')
    const message = isOutOfRange(valueAt(body, issue.instancePath)) ? OUT_OF_RANGE : `must be ${[...new Set(alternatives)].join(' or ')}`
    return [{ ...issue, message }]
  })
}

/** The values of a discriminator's tag its alternatives take (Ajv's parentSchema, in verbose mode). */
function tagValues (issue: ValidationIssue, tag: string): string {
  const oneOf = (issue.parentSchema as { oneOf?: Array<{ properties?: Record<string, { const?: unknown }> }> } | undefined)?.oneOf ?? []
  const values = oneOf.map((s) => s.properties?.[tag]?.const).filter((v) => v !== undefined).map((v) => JSON.stringify(v))
  return values.length > 0 ? `must be ${values.join(' or ')}` : 'is not one of the types accepted here'
}

export function validationDetails (issues: ValidationIssue[], context: string | undefined, body: unknown, describe?: DescribePointer): ErrorDetail[] {
  return collapseAnyOf(issues, context === 'body' ? body : undefined).map((issue) => {
    let pointer = issue.instancePath
    let message = issue.message ?? 'is invalid'
    if (issue.keyword === 'discriminator') {
      // Ajv's discriminator (a Polygon or a MultiPolygon, told by `type`): the tag is missing or no alternative's.
      const tag = String(issue.params.tag)
      pointer += `/${tag}`
      message = issue.params.error === 'tag' ? 'is required' : tagValues(issue, tag)
    } else if (issue.keyword === 'required') {
      pointer += `/${String(issue.params.missingProperty)}`
      message = 'is required'
    } else if (issue.keyword === 'const') {
      message = `must be ${JSON.stringify(issue.params.allowedValue)}`
    } else if (issue.keyword === 'additionalProperties') {
      pointer += `/${String(issue.params.additionalProperty)}`
      message = 'is not a parameter of this endpoint'
    } else if (issue.keyword === 'enum') {
      message = `must be one of ${JSON.stringify(issue.params.allowedValues)}`
    } else if (issue.keyword === 'type' && context === 'body' && /number|integer/.test(String(issue.params.type)) && isOutOfRange(valueAt(body, issue.instancePath))) {
      // JSON.parse reads a number beyond a double's range (1e400) as ±Infinity, which the schema's
      // "number" refuses as if it were no number at all.
      message = OUT_OF_RANGE
    }
    if (context === 'querystring') pointer = `?${pointer.slice(1)}`
    return { pointer, message, ...(context === 'body' && describe !== undefined ? describe(pointer, body) : {}) }
  })
}

/** What a number beyond a double's range (1e400, which JSON.parse reads as ±Infinity) is told. */
export const OUT_OF_RANGE = 'is out of range: a number must lie within ±1.8e308 (a double\'s range)'

export const isOutOfRange = (value: unknown): boolean => typeof value === 'number' && !Number.isFinite(value) && !Number.isNaN(value)

/** The value a JSON pointer (Ajv's instancePath) names in `value`, or undefined. */
function valueAt (value: unknown, pointer: string): unknown {
  let node = value
  for (const token of pointer.split('/').slice(1)) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[token.replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  return node
}

/**
 * A body schema compiled as the routes compile theirs (AJV_OPTIONS), for a check outside a route:
 * the details of the first issue, as a route would give them, or none.
 */
export function bodyChecker (schema: TSchema): (value: unknown) => ErrorDetail[] {
  const validate = new Ajv({ ...AJV_OPTIONS, allErrors: false }).compile(schema)
  return (value) => validate(value) ? [] : validationDetails((validate.errors ?? []) as ValidationIssue[], 'body', value)
}
