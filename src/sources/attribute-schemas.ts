// The attributes an organisation declares: a JSON Schema (2020-12, Ajv with `format` date and
// date-time checked) that its sources' attributes must satisfy once it is set. Its properties of
// simple types are the organisation's declared attributes: queryable and sortable with their
// type, a typed column of its view and an index each (attribute-schemas.repository.ts).
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsPlugin from 'ajv-formats'
import { ApiError, type ErrorDetail, summarise } from '../errors.js'
import { attributeNameProblem } from './attributes.js'
import { RESERVED_NAMES } from './source-properties.js'

/** A declared attribute's type as filters, sorts, the view and the indexes see it. */
export type AttributeType = 'string' | 'number' | 'boolean' | 'timestamp'

export interface DeclaredAttribute { name: string, type: AttributeType, description?: string, title?: string }

/** An organisation's schema, compiled: its version, the validator, and the declared attributes. */
export interface AttributeSchema {
  version: number
  schema: Record<string, unknown>
  validate: ValidateFunction
  declared: DeclaredAttribute[]
}

// ajv-formats is CommonJS with a default export that TypeScript's NodeNext sees as the module.
const addFormats = addFormatsPlugin as unknown as typeof addFormatsPlugin.default

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The simple type a property schema gives its values, if it gives one (a null alongside is allowed). */
function simpleType (p: Record<string, unknown>): AttributeType | undefined {
  const types = (Array.isArray(p.type) ? p.type : [p.type]).filter((t) => t !== 'null')
  if (types.length !== 1) return undefined
  const [t] = types
  if (t === 'string') return p.format === 'date' || p.format === 'date-time' ? 'timestamp' : 'string'
  if (t === 'number' || t === 'integer') return 'number'
  if (t === 'boolean') return 'boolean'
  return undefined
}

function pointerOf (e: ErrorObject, base: string): string {
  const missing = e.keyword === 'required' ? `/${String(e.params.missingProperty).replace(/~/g, '~0').replace(/\//g, '~1')}` : ''
  return `${base}${e.instancePath}${missing}`
}

/** A JSON Schema sent to be an organisation's: compiled, with its declared attributes, or a 400 pointing at what is wrong. */
export function compileSchema (schema: unknown, version: number): AttributeSchema {
  const refuse = (pointer: string, message: string): never => {
    const details = [{ pointer, message }]
    throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  }
  if (!isObject(schema)) refuse('', 'must be a JSON Schema object (2020-12) of the attributes')
  const s = schema as Record<string, unknown>
  if (s.type !== undefined && s.type !== 'object') refuse('/type', 'the attributes are a JSON object: the schema\'s type must be "object" (or left out)')
  if (s.$schema !== undefined && s.$schema !== 'https://json-schema.org/draft/2020-12/schema') refuse('/$schema', 'must be https://json-schema.org/draft/2020-12/schema (or left out)')
  const properties = s.properties ?? {}
  if (!isObject(properties)) refuse('/properties', 'must be an object: a schema per attribute')
  const declared: DeclaredAttribute[] = []
  for (const [name, p] of Object.entries(properties as Record<string, unknown>)) {
    const at = `/properties/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`
    if (RESERVED_NAMES.has(name)) refuse(at, `"${name}" is the service's own property, not an attribute (the read-only names: ${[...RESERVED_NAMES].join(', ')})`)
    const problem = attributeNameProblem(name)
    if (problem !== undefined) refuse(at, problem)
    if (!isObject(p)) continue
    const type = simpleType(p)
    if (type !== undefined) {
      declared.push({
        name, type,
        ...(typeof p.description === 'string' ? { description: p.description } : {}),
        ...(typeof p.title === 'string' ? { title: p.title } : {})
      })
    }
  }
  // strict: false lets a schema carry keywords Ajv does not know (x-… annotations, UI hints).
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, loadSchema: undefined })
  addFormats(ajv, ['date', 'date-time', 'time', 'email', 'uri', 'uuid', 'ipv4', 'ipv6', 'hostname', 'regex'])
  let validate: ValidateFunction
  try {
    validate = ajv.compile(s)
  } catch (err) {
    return refuse('', `is not a JSON Schema Ajv compiles (2020-12): ${(err as Error).message}`)
  }
  return { version, schema: s, validate, declared }
}

/** The problems of one feature's attributes under the schema, pointers below `base` (its properties). */
export function violations (schema: AttributeSchema, attributes: unknown, base: string): ErrorDetail[] {
  if (schema.validate(attributes)) return []
  return (schema.validate.errors ?? []).slice(0, 100).map((e) => ({
    pointer: pointerOf(e, base),
    message: `${e.message ?? 'is invalid'} (schema version ${schema.version}: ${e.schemaPath})`
  }))
}
