// Ajv's schema-validation issues → error details with JSON pointers into the request
// ("/features/2/geometry/type"; "?id" for a query parameter). A route may name the code its body
// failures carry and add context to each pointer (the sources routes name the feature).
import type { ErrorCode, ErrorDetail } from '../errors.js'

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

export interface ValidationIssue { instancePath: string, message?: string, keyword: string, params: Record<string, unknown> }

export function validationDetails (issues: ValidationIssue[], context: string | undefined, body: unknown, describe?: DescribePointer): ErrorDetail[] {
  return issues.map((issue) => {
    let pointer = issue.instancePath
    let message = issue.message ?? 'is invalid'
    if (issue.keyword === 'required') {
      pointer += `/${String(issue.params.missingProperty)}`
      message = 'is required'
    } else if (issue.keyword === 'const') {
      message = `must be ${JSON.stringify(issue.params.allowedValue)}`
    } else if (issue.keyword === 'additionalProperties') {
      pointer += `/${String(issue.params.additionalProperty)}`
      message = 'is not a parameter of this endpoint'
    } else if (issue.keyword === 'enum') {
      message = `must be one of ${JSON.stringify(issue.params.allowedValues)}`
    }
    if (context === 'querystring') pointer = `?${pointer.slice(1)}`
    return { pointer, message, ...(context === 'body' && describe !== undefined ? describe(pointer, body) : {}) }
  })
}
