// TypeBox schemas of conflicts as a resource (GET /conflicts, /conflicts/{id}, its stance, notes
// and history; /collections/conflicts/items): a conflict is a GeoJSON Feature whose geometry is
// the overlap, with both parties' source ids and stances. Of the other party's source nothing
// but its id and the overlap is shown.
import { type Static, Type } from '@sinclair/typebox'
import { SourceIdSchema, UtcDateTimeSchema } from '../schemas/primitives.js'
import type { FilterQueryables } from '../sources/filter.sql.js'

export const CONFLICT_ID_PATTERN = '^cfl_[0-9a-f]{32}$'
export const ConflictIdSchema = Type.String({ pattern: CONFLICT_ID_PATTERN, description: 'A conflict\'s id: "cfl_" and 32 hex digits.' })

/** A party's stance, the one list (sql/040_conflict_states.sql holds the same in its CHECK). */
export const STANCES = ['open', 'acknowledged', 'disputed', 'accepted'] as const
export type Stance = typeof STANCES[number]
export const StanceSchema = Type.Union(STANCES.map((s) => Type.Literal(s)), { description: 'open: not looked at yet; acknowledged: seen; disputed: contested (with a reason); accepted: a shared or layered use.' })

/** A pair's state: from both stances, and resolved once the overlap is gone. */
export const STATES = ['open', 'in_review', 'disputed', 'accepted', 'resolved'] as const
export type ConflictState = typeof STATES[number]
export const StateSchema = Type.Union(STATES.map((s) => Type.Literal(s)), { description: 'resolved once the overlap is gone; else disputed if either party disputes, open if both are open, accepted if both accept, otherwise in_review.' })

export const RESOLUTIONS = ['edited', 'carved', 'deleted', 'recomputed'] as const
export const ResolutionSchema = Type.Union(RESOLUTIONS.map((s) => Type.Literal(s)), { description: 'How the overlap disappeared: a source edited, carved out or deleted, or the rule or tolerance changed.' })

export const PartySchema = Type.Object({
  source_id: SourceIdSchema,
  own: Type.Boolean({ description: 'Whether the source is your organisation\'s (admins: false unless it is theirs).' }),
  stance: StanceSchema,
  reason: Type.Optional(Type.String({ description: 'The reason the party gave for its stance.' })),
  overlap_ratio: Type.Number({ minimum: 0, maximum: 1, description: 'overlap_m2 over the area of this source.' })
}, { additionalProperties: false })

const MultiPolygonSchema = Type.Object({
  type: Type.Union([Type.Literal('Polygon'), Type.Literal('MultiPolygon')]),
  coordinates: Type.Array(Type.Unknown())
}, { description: 'The overlap: the intersection of the two areas (a Polygon or MultiPolygon, in CRS84).' })

export const ConflictSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: ConflictIdSchema,
  geometry: Type.Union([MultiPolygonSchema, Type.Null()], { description: 'The overlap while the conflict lasts; null once resolved.' }),
  properties: Type.Object({
    state: StateSchema,
    parties: Type.Array(PartySchema, { minItems: 2, maxItems: 2, description: 'The two sources, the smaller id first.' }),
    overlap_m2: Type.Number({ description: 'Area in m² of the overlap (the last one, once resolved).' }),
    overlap_start: UtcDateTimeSchema,
    overlap_end: UtcDateTimeSchema,
    started_at: UtcDateTimeSchema,
    resolved_at: Type.Optional(UtcDateTimeSchema),
    resolution: Type.Optional(ResolutionSchema),
    version: Type.Integer({ minimum: 1, description: 'One more at every change of a stance or of the overlap: the ETag names it.' }),
    updated_at: UtcDateTimeSchema
  }, { additionalProperties: false })
}, { description: 'A conflict: two sources claiming the same land for the same time.' })
export type ConflictView = Static<typeof ConflictSchema>

export const LinkSchema = Type.Object({ href: Type.String(), rel: Type.String(), type: Type.Optional(Type.String()), title: Type.Optional(Type.String()) })

export const ConflictsCollectionSchema = Type.Object({
  id: Type.Literal('conflicts'),
  title: Type.String(),
  description: Type.String(),
  itemType: Type.Literal('feature'),
  crs: Type.Array(Type.String(), { description: 'CRS84 only.' }),
  storageCrs: Type.String(),
  links: Type.Array(LinkSchema)
}, { description: 'The conflicts collection (no extent: it would mean computing every overlap).' })

export const ConflictQueryablesSchema = Type.Object({
  $schema: Type.String(),
  type: Type.Literal('object'),
  title: Type.String(),
  description: Type.String(),
  properties: Type.Record(Type.String(), Type.Unknown(), { description: 'Each queryable\'s JSON Schema.' }),
  additionalProperties: Type.Literal(false)
}, { description: 'The Queryables document of the conflicts (JSON Schema 2020-12; its $id is this URL).' })

export const ConflictPageSchema = Type.Object({
  type: Type.Literal('FeatureCollection'),
  features: Type.Array(ConflictSchema),
  numberReturned: Type.Integer({ minimum: 0 }),
  links: Type.Array(LinkSchema, { description: 'self, and next (with a cursor) when there are more.' })
}, { description: 'A page of conflicts, in id order.' })

const param = (description: string, extra: Record<string, unknown> = {}) => Type.Optional(Type.String({ maxLength: 1000, description, ...extra }))

export const ConflictListQuerySchema = Type.Object({
  state: Type.Optional(Type.Union([...STATES.map((s) => Type.Literal(s)), Type.Literal('all')], { description: 'Only conflicts in this state; all: every one. Without it: the unresolved ones.' })),
  source_id: Type.Optional(SourceIdSchema),
  bbox: param('minLon,minLat,maxLon,maxLat (CRS84): conflicts whose overlap meets this box (unresolved ones only: a resolved one has no overlap).'),
  datetime: param('An instant or an interval (a/b, ../b, a/..): conflicts whose overlapping period meets it.'),
  limit: param('At most this many, 1–1000 (100 by default).', { pattern: '^[0-9]{1,4}$' }),
  cursor: param('The position of the next page, from a next link.', { pattern: CONFLICT_ID_PATTERN }),
  filter: param('A CQL2 filter (OGC API – Features Part 3) over the queryables of /collections/conflicts/queryables: state, overlap_m2, overlap_start, overlap_end, started_at, resolved_at, updated_at, version, resolution, source_a, source_b and geometry (the overlap). ANDed with the other parameters (state= included: without it, unresolved conflicts only).', { maxLength: 8192 }),
  'filter-lang': Type.Optional(Type.Union([Type.Literal('cql2-text'), Type.Literal('cql2-json')], { description: 'The filter\'s encoding: cql2-text (the default) or cql2-json.' })),
  'filter-crs': param('The CRS of the filter\'s geometries: only http://www.opengis.net/def/crs/OGC/1.3/CRS84.'),
  f: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('geojson')], { description: 'Ignored: always GeoJSON (for OGC clients that send it).' }))
}, { additionalProperties: false })
export type ConflictListQuery = Static<typeof ConflictListQuerySchema>

export const ConflictParamsSchema = Type.Object({ id: ConflictIdSchema })

export const StanceBodySchema = Type.Object({
  stance: Type.Union([Type.Literal('acknowledged'), Type.Literal('disputed'), Type.Literal('accepted')], { description: 'The new stance (a party never goes back to open).' }),
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Why: required to dispute.' })),
  source_id: Type.Optional({ ...SourceIdSchema, description: 'The party whose stance this is: needed only when your organisation holds both sources, or when an admin acts for a party.' })
}, { additionalProperties: false })
export type StanceBody = Static<typeof StanceBodySchema>

export const NoteBodySchema = Type.Object({
  body: Type.String({ minLength: 1, maxLength: 4000, description: 'The note.' })
}, { additionalProperties: false })

export const NoteSchema = Type.Object({
  id: Type.Integer(),
  body: Type.String(),
  own: Type.Boolean({ description: 'Whether your organisation wrote it.' }),
  author: Type.Optional(Type.String({ description: 'The writer\'s e-mail: only for your own organisation\'s notes (admins: every one).' })),
  created_at: UtcDateTimeSchema
}, { additionalProperties: false })
export type NoteView = Static<typeof NoteSchema>
export const NotesSchema = Type.Object({ notes: Type.Array(NoteSchema, { description: 'Oldest first.' }) })

export const StanceChangeSchema = Type.Object({
  source_id: SourceIdSchema,
  from: Type.Union([StanceSchema, Type.Null()], { description: 'null: the stance the conflict started with.' }),
  to: StanceSchema,
  reason: Type.Optional(Type.String()),
  version: Type.Integer({ minimum: 1 }),
  recorded_at: UtcDateTimeSchema,
  recorded_by: Type.Optional(Type.String({ description: 'Who: only for your own organisation\'s changes (admins: every one).' }))
}, { additionalProperties: false })
export const HistorySchema = Type.Object({ stances: Type.Array(StanceChangeSchema, { description: 'Oldest first.' }) })

export const CarveQuerySchema = Type.Object({
  dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: answer what would remain, store nothing.' }))
}, { additionalProperties: false })
export const CarveSourceQuerySchema = Type.Object({ id: SourceIdSchema, ...CarveQuerySchema.properties }, { additionalProperties: false })
export const CarveItemParamsSchema = Type.Object({ id: SourceIdSchema })

export const CarveBodySchema = Type.Object({
  conflicts: Type.Union([
    Type.Array(ConflictIdSchema, { minItems: 1, maxItems: 1000, uniqueItems: true }),
    Type.Literal('all')
  ], { description: 'The conflicts to give up: their ids, or all (every unresolved conflict of the source).' })
}, { additionalProperties: false })

export const CarveDryRunSchema = Type.Object({
  type: Type.Literal('Feature'),
  id: SourceIdSchema,
  geometry: MultiPolygonSchema,
  properties: Type.Object({
    dry_run: Type.Literal(true),
    area_m2: Type.Number({ description: 'The area that would remain, m².' }),
    area_lost_m2: Type.Number({ description: 'The area the source would give up, m².' }),
    conflicts: Type.Array(ConflictIdSchema, { description: 'The conflicts the carve-out gives up.' })
  }, { additionalProperties: false })
}, { description: 'dry_run=true: the area the source would have after the carve-out; nothing stored.' })

/**
 * What a CQL2 filter on the conflicts may name, and its type (the checker of
 * features/filters/cql2.ts takes this; conflicts.repository.ts gives each its SQL).
 */
export const CONFLICT_QUERYABLES = {
  types: {
    state: 'string', overlap_m2: 'number', overlap_start: 'timestamp', overlap_end: 'timestamp', started_at: 'timestamp',
    resolved_at: 'timestamp', updated_at: 'timestamp', version: 'number', resolution: 'string', source_a: 'string', source_b: 'string', geometry: 'geometry'
  },
  attributes: false,
  period: ['overlap_start', 'overlap_end']
} as const satisfies FilterQueryables

/** The Queryables document of the conflicts (JSON Schema), each queryable described once here. */
export const CONFLICT_QUERYABLES_DOCUMENT = {
  type: 'object',
  title: 'conflicts',
  description: 'What a filter on /collections/conflicts/items may name. INTERVAL(overlap_start, overlap_end) is the overlapping period.',
  properties: {
    state: { type: 'string', enum: [...STATES], description: 'The pair\'s state.' },
    overlap_m2: { type: 'number', description: 'Area in m² of the overlap.' },
    overlap_start: { type: 'string', format: 'date-time', description: 'Start of the overlapping period.' },
    overlap_end: { type: 'string', format: 'date-time', description: 'End of the overlapping period (exclusive; null: open).' },
    started_at: { type: 'string', format: 'date-time', description: 'When the conflict was found.' },
    resolved_at: { type: 'string', format: 'date-time', description: 'When it was resolved (null while it lasts).' },
    updated_at: { type: 'string', format: 'date-time', description: 'Its last change.' },
    version: { type: 'integer', description: 'Its version (the ETag\'s).' },
    resolution: { type: 'string', enum: [...RESOLUTIONS], description: 'How it was resolved.' },
    source_a: { type: 'string', description: 'The smaller source id of the pair (parties[0].source_id).' },
    source_b: { type: 'string', description: 'The larger source id of the pair (parties[1].source_id).' },
    geometry: { format: 'geometry-any', description: 'The overlap (null once resolved), in CRS84.' }
  },
  additionalProperties: false
}
