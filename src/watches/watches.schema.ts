// TypeBox schemas of the watched areas (POST /watches, GET /watches, GET and DELETE /watches/{id}).
import { type Static, Type } from '@sinclair/typebox'
import { DateTimeInputSchema, UtcDateTimeSchema } from '../schemas/primitives.js'
import { AreaSchema, MultiPolygonSchema, PolygonSchema } from '../sources/sources.schema.js'

export const WatchIdSchema = Type.String({ pattern: '^wat_[0-9a-f]{32}$', description: '"wat_" and 32 hex digits.' })

const FilterLangSchema = Type.Union([Type.Literal('cql2-text'), Type.Literal('cql2-json')], {
  description: 'The filter\'s encoding: cql2-text (the default for a string) or cql2-json (the default for an object).'
})

export const CreateWatchSchema = Type.Object({
  geometry: AreaSchema,
  start_at: DateTimeInputSchema,
  end_at: DateTimeInputSchema,
  filter: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Object({}, { additionalProperties: true })], {
    description: 'A CQL2 filter on the sources, as the items\' `filter` takes it (the same queryables; attributes as properties.name): only sources that match it are told. Text, or CQL2 JSON as an object.'
  })),
  filter_lang: Type.Optional(FilterLangSchema)
}, { additionalProperties: false, description: 'A watched area: the area (at most WATCH_MAX_AREA_KM2), the period [start_at, end_at) and an optional CQL2 filter.' })
export type CreateWatch = Static<typeof CreateWatchSchema>

export const WatchSchema = Type.Object({
  id: WatchIdSchema,
  geometry: Type.Union([PolygonSchema, MultiPolygonSchema]),
  start_at: UtcDateTimeSchema,
  end_at: UtcDateTimeSchema,
  area_m2: Type.Number({ description: 'The area in m² on the WGS 84 ellipsoid, as a source\'s area_m2.' }),
  filter: Type.Optional(Type.String({ description: 'The filter as sent (CQL2 JSON as its JSON text).' })),
  filter_lang: Type.Optional(FilterLangSchema),
  created_at: UtcDateTimeSchema
}, { description: 'A watched area of your organisation.' })
export type Watch = Static<typeof WatchSchema>

export const WatchParamsSchema = Type.Object({ id: WatchIdSchema })

export const WatchListQuerySchema = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: 'Watches per page, 1 to 1,000 (default 100).' })),
  cursor: Type.Optional({ ...WatchIdSchema, description: 'From the next link: the watches after this one.' })
}, { additionalProperties: false })

export const WatchListSchema = Type.Object({
  watches: Type.Array(WatchSchema, { description: 'In id order.' }),
  links: Type.Array(Type.Object({ href: Type.String(), rel: Type.String(), type: Type.String() }), { description: 'self, and next when there are more.' })
})

export const WatchDeletedSchema = Type.Object({ message: Type.String() })
