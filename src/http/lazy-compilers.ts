// Fastify's own schema compilers (ajv for requests, fast-json-stringify for responses), each
// route's compiled on its first use instead of before the service listens. Every route lists a
// response schema per status it may send (a dozen errors each), most of which a process never
// sends: compiling them all at start-up was most of the time between loading the modules and
// listening (docs/performance.md, "Embedded start-up"). The schemas themselves are checked by the
// test suite (every route is called; test/openapi checks the document), so a schema error still
// fails there rather than in production's first request.
import ValidatorSelector from '@fastify/ajv-compiler'
import type { FastifyServerOptions } from 'fastify'
import SerializerSelector from '@fastify/fast-json-stringify-compiler'

type Compiled = ((data: unknown) => unknown) & { errors?: unknown }
type Factory = (externalSchemas: unknown, options: unknown) => (routeSchema: unknown) => Compiled

/** A compilers factory whose compiler, and each function it makes, is built on the first call. */
function lazily (factory: Factory): Factory {
  return (externalSchemas, options) => {
    let compiler: ReturnType<Factory> | undefined
    return (routeSchema) => {
      let compiled: Compiled | undefined
      const first: Compiled = (data) => {
        compiled ??= (compiler ??= factory(externalSchemas, options))(routeSchema)
        const result = compiled(data)
        // Fastify reads a failed validation's issues from the function it was given.
        first.errors = compiled.errors
        return result
      }
      return first
    }
  }
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>

/** For Fastify's `schemaController.compilersFactory`. */
export const lazyCompilersFactory = {
  buildValidator: lazily(ValidatorSelector() as unknown as Factory),
  buildSerializer: lazily(SerializerSelector() as unknown as Factory)
} as unknown as CompilersFactory
