// One source's writes and reads, the same on /sources and /collections/sources/items: POST (a
// collection created under the conflict policy), PUT (a Feature replaces it), PATCH (an RFC 7396
// merge patch), DELETE, each at the versions If-Match named, and the reads that go with them (410
// for a deleted source, as_of, versions). Plain values in and out: the routes read the request
// (the actor, If-Match, the body) and send the answer (source-replies.ts). Validation is POST's:
// a feature is checked as a one-feature collection (geojson.ts, rejections.ts) and the pointers
// say where in this body the problem is.
import { Value } from '@sinclair/typebox/value'
import { ApiError, type ErrorDetail, summarise } from '../errors.js'
import type { Scope } from '../db/database.js'
import { mergePatch } from '../http/merge-patch.js'
import { OUT_OF_RANGE, isOutOfRange } from '../http/validation.js'
import { conflictIds, conflictKeysRefusal, featureConflicts, overlapRejection } from './conflicts.js'
import { parseDateTime } from './datetime.js'
import { violations } from './attribute-schemas.js'
import type { AttributeSchemaStore } from './attribute-schemas.store.js'
import { attributesOf } from './attributes.js'
import { checkArea, checkFeatureCollection } from './geojson.js'
import { explainRejection } from './rejections.js'
import { etagOf, versionFeature } from './source-feature.js'
import { RESERVED_NAMES } from './source-properties.js'
import { newSourceIds } from './source-id.js'
import { MultiPolygonSchema, PolygonSchema, type AreaInput, type CreateQuery, type CreateResponse, type DryRunResponse, type FeatureCollection, type FeatureInput } from './sources.schema.js'
import type { VersionsResponse } from './source-feature.schema.js'
import type { ConflictsById, NewSource, Owner, SourceEdit, SourceRow, VersionRow } from './sources.repository.js'
import type { SourceStore } from './sources.store.js'
import { CRS84, type Crs, EPSG_PREFIX, inArea } from './crs.js'
import type { FeatureOutput } from './source-properties.js'

/** A pointer into a one-feature collection (/features/0/…) as one into the feature itself. */
function unwrap (details: ErrorDetail[] = []): ErrorDetail[] {
  return details.map(({ feature_index: _index, ...d }) => ({ ...d, pointer: d.pointer.replace(/^\/features\/0(?=\/|$)/, '') }))
}

function rewrap (err: unknown): unknown {
  if (!(err instanceof ApiError) || err.details === undefined) return err
  const details = unwrap(err.details)
  return new ApiError(err.code, details.length > 0 && err.message.startsWith('/features/0') ? summarise(details) : err.message, { details, headers: err.headers, fields: err.fields })
}

/** The checks of POST on one feature: the source to store (with this id), or an ApiError pointing into the feature. */
export function checkFeature (feature: FeatureInput, id: string, idProperty?: string): NewSource {
  const checked = checkFeatureCollection({ type: 'FeatureCollection', features: [feature] }, idProperty)
  if (!checked.ok) {
    const details = unwrap(checked.details)
    throw new ApiError(checked.code, summarise(details), { details })
  }
  return { ...(checked.features[0] as NewSource), id }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const invalid = (details: ErrorDetail[]): ApiError => new ApiError('INVALID_GEOJSON', summarise(details), { details })

/**
 * What a merge patch changes, checked without the stored source: the members it may name (type,
 * geometry, properties; never id or anything else: 400), the polygon, date-times and attributes
 * it gives, checked as POST checks them (the attributes merged into the stored ones in the
 * database, RFC 7396 again, recursively). What needs the stored source
 * too (a start_at after the stored end_at) the database refuses, and `patch` then explains.
 */
export function patchEdit (patch: unknown): SourceEdit {
  if (!isObject(patch)) throw invalid([{ pointer: '', message: 'a merge patch of a source must be a JSON object' }])
  const details: ErrorDetail[] = []
  const edit: SourceEdit = {}
  for (const [key, value] of Object.entries(patch)) {
    if (key === 'type') {
      if (value !== 'Feature') details.push({ pointer: '/type', message: 'must be "Feature" (a source stays a Feature)' })
    } else if (key === 'geometry') {
      if (!isObject(value)) {
        details.push({ pointer: '/geometry', message: value === null ? 'the geometry cannot be removed' : 'must be an object (a Polygon, or the members of one to replace)' })
        continue
      }
      // Merged into an area whose coordinates are replaced whole (an array). Without a type, the
      // coordinates' depth says which (a Polygon's positions are three arrays deep, a
      // MultiPolygon's four); without coordinates, the stored area stays.
      if (!('coordinates' in value)) {
        if (value.type !== undefined && value.type !== 'Polygon' && value.type !== 'MultiPolygon') details.push({ pointer: '/geometry/type', message: 'must be "Polygon" or "MultiPolygon"' })
        else if (value.type !== undefined) details.push({ pointer: '/geometry/coordinates', message: 'is required with a type: the coordinates of the new area' })
        continue
      }
      const depth = (c: unknown, n = 0): number => Array.isArray(c) && n < 4 ? depth(c[0], n + 1) : n
      const type = value.type ?? (depth(value.coordinates) >= 4 ? 'MultiPolygon' : 'Polygon')
      const schema = type === 'MultiPolygon' ? MultiPolygonSchema : PolygonSchema
      const merged = mergePatch({ type, coordinates: [] }, value)
      if (type !== 'Polygon' && type !== 'MultiPolygon') {
        details.push({ pointer: '/geometry/type', message: 'must be "Polygon" or "MultiPolygon"' })
        continue
      }
      if (!Value.Check(schema, merged)) {
        details.push(...[...Value.Errors(schema, merged)].slice(0, 100).map((e) => ({ pointer: `/geometry${e.path}`, message: isOutOfRange(e.value) ? OUT_OF_RANGE : e.message })))
        continue
      }
      const area = merged as AreaInput
      checkArea(area, '/geometry/coordinates', details)
      edit.geometry = area
    } else if (key === 'properties') {
      if (!isObject(value)) {
        details.push({ pointer: '/properties', message: value === null ? 'the properties cannot be removed' : 'must be an object' })
        continue
      }
      const attributes: Record<string, unknown> = {}
      for (const [name, text] of Object.entries(value)) {
        const pointer = `/properties/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`
        if (name !== 'start_at' && name !== 'end_at') {
          // The service's other properties are read-only (attributesOf leaves them out); the rest are attributes, merged by RFC 7396.
          attributes[name] = text
        } else if (typeof text !== 'string' || text.length === 0 || text.length > 64) {
          details.push({ pointer, message: text === null ? `${name} cannot be removed` : `${name} must be a date-time string` })
        } else {
          const parsed = parseDateTime(text)
          if (typeof parsed === 'string') details.push({ pointer, message: `${name} ${parsed}` })
          else if (name === 'start_at') edit.startAt = parsed.iso
          else edit.endAt = parsed.iso
        }
      }
      const checked = attributesOf(attributes, '/properties')
      if ('details' in checked) {
        if (checked.tooLarge) throw new ApiError('ATTRIBUTES_TOO_LARGE', summarise(checked.details), { details: checked.details })
        details.push(...checked.details)
      } else if (checked.text !== '{}') {
        edit.attributesPatch = checked.text
      }
    } else {
      details.push({
        pointer: `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        message: key === 'id' ? 'the client feature id cannot be patched (PUT replaces it)' : `"${key}" cannot be patched: only geometry and properties can`
      })
    }
  }
  if (details.length > 0) throw invalid(details.slice(0, 100))
  if (edit.startAt !== undefined && edit.endAt !== undefined && Date.parse(edit.startAt) >= Date.parse(edit.endAt)) {
    const period = [{ pointer: '/properties', message: 'start_at must be strictly before end_at' }]
    throw new ApiError('INVALID_PERIOD', summarise(period), { details: period })
  }
  return edit
}

/** The source as the Feature a PUT would send: what a merge patch applies to (its read-only properties are ignored as PUT ignores them). */
function asInput (row: SourceRow): FeatureInput {
  const feature = JSON.parse(row.feature) as { geometry: FeatureInput['geometry'], properties: FeatureInput['properties'] & { feature_id: string } }
  return { type: 'Feature', id: feature.properties.feature_id, properties: feature.properties, geometry: feature.geometry }
}

const stale = (version: number): ApiError => new ApiError('PRECONDITION_FAILED',
  `The source has changed since the ETag you sent: it is at version ${version} (ETag ${etagOf(version)}); read it again and repeat the change. Nothing was changed.`,
  { fields: { version } })

/** 410 for a source the caller's organisation deleted, else 404. */
export async function missing (store: SourceStore, id: string, scope: Scope): Promise<ApiError> {
  const deletion = await store.deletion(id, scope)
  if (deletion === undefined) return new ApiError('NOT_FOUND', `No source with id ${id}.`)
  return new ApiError('GONE', `Source ${id} was deleted at ${deletion.deleted_at}; its versions stay readable.`, { fields: deletion })
}

/** Why a change changed nothing: another version is current (412), or it is deleted (410) or not there (404). */
async function unchanged (store: SourceStore, id: string, scope: Scope): Promise<ApiError> {
  const version = await store.version(id, scope)
  return version !== undefined ? stale(version) : await missing(store, id, scope)
}

/** Who is changing: `by` is '@' and the account's id (the history records its e-mail). */
export interface Actor { by: string, scope: Scope }

/** A write the database refused, explained as POST's are (409/422 with pointers into this body). */
async function refused (store: SourceStore, err: unknown, id: string, scope: Scope, next: (row: SourceRow) => NewSource): Promise<unknown> {
  const keys = conflictKeysRefusal(err)
  if (keys !== undefined) return keys
  const row = await store.find(id, scope)
  if (row === undefined) return err
  const source = next(row)
  return rewrap(await explainRejection(err, [source], (s) => store.diagnose(row.organisation, s)))
}

/** A polygon's rings, and the pointer to its coordinates in the body. */
interface PlacedRings { rings: number[][][], base: string }

/**
 * An area's polygons with their pointers, for toCrs84: a Polygon's rings, or each part of a
 * MultiPolygon (by the coordinates' shape when the type is absent, as PATCH allows). Coordinates
 * of neither shape are left as they are for the checks that follow, which say what is wrong.
 */
export function placedPolygons (geometry: unknown, base: string): PlacedRings[] {
  const coordinates = isObject(geometry) ? geometry.coordinates : undefined
  if (Value.Check(PolygonSchema.properties.coordinates, coordinates)) return [{ rings: coordinates, base }]
  if (Value.Check(MultiPolygonSchema.properties.coordinates, coordinates)) return coordinates.map((rings, k) => ({ rings, base: `${base}/${k}` }))
  return []
}

/** A CRS's name in messages: EPSG:28992 (its name), or CRS84. */
const crsName = (crs: Crs): string => crs.uri.startsWith(EPSG_PREFIX) ? `EPSG:${crs.uri.slice(EPSG_PREFIX.length)} (${crs.name})` : 'CRS84'

/**
 * Polygons given in `crs` (Content-Crs), made CRS84 in place before POST's checks: the axes put
 * in PostGIS's order, every position transformed by PostGIS in one statement, and each checked
 * to lie in the CRS's area of use (422 naming the position). The checks that follow are those of
 * CRS84 positions, as without the header.
 */
export async function toCrs84 (store: SourceStore, crs: Crs | undefined, polygons: PlacedRings[]): Promise<void> {
  if (crs === undefined || crs.uri === CRS84) return
  const xs: number[] = []
  const ys: number[] = []
  const outside: ErrorDetail[] = []
  for (const { rings } of polygons) {
    for (const ring of rings) {
      for (const pos of ring) {
        const [a, b] = pos as [number, number]
        xs.push(crs.northFirst ? b : a)
        ys.push(crs.northFirst ? a : b)
      }
    }
  }
  const geographic = crs.srid === 4326
  // A position thousands of kilometres away is outside any area of use; PROJ need not see it.
  const absurd = !geographic && xs.some((x, i) => Math.abs(x) > 1e8 || Math.abs(ys[i] as number) > 1e8)
  const { lon, lat } = geographic || absurd ? { lon: xs, lat: ys } : await store.toLonLat(xs, ys, crs.srid)
  let i = 0
  for (const { rings, base } of polygons) {
    rings.forEach((ring, r) => {
      ring.forEach((pos, p) => {
        const [x, y] = [lon[i] as number, lat[i] as number]
        i++
        const ok = !absurd && Number.isFinite(x) && Number.isFinite(y) && (geographic ? Math.abs(x) <= 180 && Math.abs(y) <= 90 : inArea(crs, x, y))
        if (!ok) {
          const { west, south, east, north } = crs.area
          if (outside.length < 100) outside.push({ pointer: `${base}/${r}/${p}`, message: `position ${JSON.stringify(pos.slice(0, 2))} is outside the area of use of ${crsName(crs)}: longitude ${west} to ${east}, latitude ${south} to ${north}` })
          return
        }
        pos[0] = x
        pos[1] = y
      })
    })
  }
  if (outside.length > 0) throw new ApiError('OUTSIDE_CRS_AREA', summarise(outside), { details: outside })
}

/**
 * What a write may carry besides its body: the CRS of its coordinates (Content-Crs; undefined:
 * CRS84) and, in acknowledge mode, the conflict keys it cites (Conflict-Keys; undefined: not in
 * that mode).
 */
export interface WriteOptions { crs?: Crs, keys?: string[] }

/** What POST answers: 201 with the ids (`body.id` when one source was created), or 200 for a dry run. */
export type Created = { status: 200, body: DryRunResponse } | { status: 201, body: CreateResponse }

/**
 * POST's work, for /sources and /collections/sources/items alike: checks (400/422), ids, the
 * insert under the conflict policy (the query's on_conflict, else the deployment's), and what
 * to answer.
 */
export async function createSources (
  store: SourceStore, schemas: AttributeSchemaStore, owner: Owner, fc: FeatureCollection, query: CreateQuery, conflictPolicy: NonNullable<CreateQuery['on_conflict']>,
  { crs, keys: conflictKeys = [] }: WriteOptions = {}
): Promise<Created> {
  if (crs !== undefined) await toCrs84(store, crs, fc.features.flatMap((f, i) => placedPolygons(f.geometry, `/features/${i}/geometry/coordinates`)))
  const checked = checkFeatureCollection(fc, query.id_property)
  if (!checked.ok) throw new ApiError(checked.code, summarise(checked.details), { details: checked.details })
  const schema = await schemas.current(owner.organisation)
  if (schema !== undefined) {
    const details = checked.features.flatMap((f) => violations(schema, JSON.parse(f.attributes), `/features/${f.index}/properties`)
      .map((d) => ({ ...d, feature_index: f.index, feature_id: f.featureId })))
    if (details.length > 0) throw invalidAttributes(details)
  }
  const ids = newSourceIds(checked.features.length)
  const sources: NewSource[] = checked.features.map((f, i) => ({ ...f, id: ids[i] as string }))
  const insert = { owner, sources }
  const dryRun = query.dry_run === 'true'
  const policy = query.on_conflict ?? conflictPolicy
  const reject = policy === 'reject'
  // A claim made knowingly: the database checks the cited keys in the writing transaction.
  const keys = policy === 'acknowledge' ? conflictKeys : undefined
  let conflicts: ConflictsById
  try {
    if (dryRun || reject || keys !== undefined) {
      // In a transaction of its own, committed unless it is a dry run or rejected for its
      // conflicts: what they read is what a commit would have recorded. A write made knowingly
      // cites its keys in it, and fails in it when one is missing (conflictKeysRefusal).
      const outcome = await store.insertIf(insert, (found) => !dryRun && (!reject || found.size === 0), keys)
      if (reject && outcome.conflicts.size > 0) throw overlapRejection(outcome.conflicts, sources)
      conflicts = outcome.conflicts
    } else {
      conflicts = await store.insert(insert)
    }
  } catch (err) {
    if (err instanceof ApiError) throw err
    throw conflictKeysRefusal(err) ?? await explainRejection(err, sources, (s) => store.diagnose(owner.organisation, s))
  }
  if (dryRun) {
    const each = featureConflicts(conflicts, sources)
    return {
      status: 200,
      body: {
        message: `Dry run, nothing was stored: ${sources.length} source${sources.length > 1 ? 's' : ''} would be created, ${each.filter((f) => f.conflict).length} with conflicts.`,
        dry_run: true,
        sources: each
      }
    }
  }
  const created = sources.map((s) => ({ id: s.id, feature_id: s.featureId, ...conflictIds(conflicts, s.id) }))
  const only = created.length === 1 ? created[0] : undefined
  return only !== undefined
    ? { status: 201, body: { id: only.id, message: 'Source created.', sources: created } }
    : { status: 201, body: { message: `${created.length} sources created.`, sources: created } }
}

/**
 * PUT: the Feature checked as POST checks one (400/422), then one UPDATE at the versions If-Match
 * named (undefined: any; 412/404/410; 409 on a feature id clash). With `keys`, a change made
 * knowingly (409 CONFLICT_KEYS_REQUIRED unless they cite every new conflict's other source).
 */
export async function replace (store: SourceStore, schemas: AttributeSchemaStore, actor: Actor, id: string, versions: number[] | undefined, feature: FeatureInput, idProperty?: string, { crs, keys }: WriteOptions = {}): Promise<SourceRow> {
  if (crs !== undefined) await toCrs84(store, crs, placedPolygons(feature.geometry, '/geometry/coordinates'))
  const source = checkFeature(feature, id, idProperty)
  const schema = await schemas.current(await organisationOf(store, actor, id))
  if (schema !== undefined) {
    const details = violations(schema, JSON.parse(source.attributes), '/properties')
    if (details.length > 0) throw invalidAttributes(details)
  }
  let row: SourceRow | undefined
  try {
    row = await store.update({ id, scope: actor.scope, versions, by: actor.by }, source, keys)
  } catch (err) {
    throw await refused(store, err, id, actor.scope, () => source)
  }
  if (row === undefined) throw await unchanged(store, id, actor.scope)
  return row
}

/**
 * PATCH: the merge patch checked alone (patchEdit), then one UPDATE that merges it into the
 * stored source at the versions If-Match named. When the database refuses the result, the stored
 * source is read, the patch merged into it and the whole checked as PUT's body, which says why.
 */
export async function patch (store: SourceStore, schemas: AttributeSchemaStore, actor: Actor, id: string, versions: number[] | undefined, body: unknown, { crs, keys }: WriteOptions = {}): Promise<SourceRow> {
  if (crs !== undefined && isObject(body)) await toCrs84(store, crs, placedPolygons(body.geometry, '/geometry/coordinates'))
  const edit = patchEdit(body)
  // Under a declared schema the merged attributes are checked first, then written at the version
  // they were merged into (If-Match: * too), so that what was checked is what is stored.
  let guard = versions
  if (edit.attributesPatch !== undefined) {
    const schema = await schemas.current(await organisationOf(store, actor, id))
    if (schema !== undefined) {
      const current = await store.find(id, actor.scope)
      if (current === undefined) throw await missing(store, id, actor.scope)
      if (versions !== undefined && !versions.includes(current.version)) throw stale(current.version)
      const merged = mergePatch(attributesOfRow(current), JSON.parse(edit.attributesPatch))
      const details = violations(schema, merged, '/properties')
      if (details.length > 0) throw invalidAttributes(details)
      guard = versions === undefined ? [current.version] : versions.filter((v) => v === current.version)
    }
  }
  let row: SourceRow | undefined
  try {
    row = await store.update({ id, scope: actor.scope, versions: guard, by: actor.by }, edit, keys)
  } catch (err) {
    throw await refused(store, err, id, actor.scope, (current) => checkFeature(mergePatch(asInput(current), body) as FeatureInput, id))
  }
  if (row === undefined) {
    // If-Match: * whose version changed between the check and the write: check again.
    if (versions === undefined && guard !== undefined) return await patch(store, schemas, actor, id, versions, body, { keys })
    throw await unchanged(store, id, actor.scope)
  }
  return row
}

/** The organisation whose schema applies to a change: the caller's, or for an admin the source's (404 when there is none). */
async function organisationOf (store: SourceStore, actor: Actor, id: string): Promise<string> {
  if (actor.scope !== 'all') return actor.scope.organisation
  const row = await store.find(id, 'all')
  if (row === undefined) throw await missing(store, id, 'all')
  return row.organisation
}

/** A stored source's attributes: its Feature's properties but the service's own. */
function attributesOfRow (row: SourceRow): Record<string, unknown> {
  const { properties } = JSON.parse(row.feature) as { properties: Record<string, unknown> }
  return Object.fromEntries(Object.entries(properties).filter(([name]) => !RESERVED_NAMES.has(name)))
}

const invalidAttributes = (details: ErrorDetail[]): ApiError => new ApiError('ATTRIBUTES_INVALID', summarise(details), { details: details.slice(0, 100) })

/** DELETE at the versions If-Match named (undefined: any); the version the deletion is. */
export async function remove (store: SourceStore, actor: Actor, id: string, versions: number[] | undefined): Promise<number> {
  const version = await store.delete({ id, scope: actor.scope, versions, by: actor.by })
  if (version === undefined) throw await unchanged(store, id, actor.scope)
  return version
}

/** as_of as an instant PostgreSQL reads exactly, or a 400 pointing at it. */
export function asOfInstant (text: string): string {
  const parsed = parseDateTime(text)
  if (typeof parsed === 'string') {
    const details = [{ pointer: '?as_of', message: `as_of ${parsed}` }]
    throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  }
  return parsed.iso
}

/** GET of one source: the source (404, or 410 for a source the caller's organisation deleted). */
export async function current (store: SourceStore, scope: Scope, id: string, output?: FeatureOutput): Promise<SourceRow> {
  const row = await store.find(id, scope, output)
  if (row === undefined) throw await missing(store, id, scope)
  return row
}

/** GET with as_of: the version held then (404 before it existed, 410 after it was deleted). */
export async function heldAt (store: SourceStore, scope: Scope, id: string, asOf: string, output?: FeatureOutput): Promise<VersionRow> {
  const version = await store.versionAt(id, scope, asOfInstant(asOf), output)
  if (version === undefined) throw new ApiError('NOT_FOUND', `No source with id ${id} at ${asOf}.`)
  if (version.operation === 'delete') throw new ApiError('GONE', `Source ${id} had been deleted by ${asOf} (at ${version.recorded_at}).`, { fields: { deleted_at: version.recorded_at, version: version.version } })
  return version
}

/** A page of a source's versions, newest first; `self` is the URL asked for (the next link keeps its query). */
export async function versionsPage (store: SourceStore, scope: Scope, id: string, self: URL, limit: number, cursor: string | undefined, output?: FeatureOutput): Promise<VersionsResponse> {
  const rows = await store.versions(id, scope, { limit, ...(cursor !== undefined ? { before: Number(cursor) } : {}) }, output)
  if (rows.length === 0 && cursor === undefined) throw new ApiError('NOT_FOUND', `No source with id ${id}.`)
  const shown = rows.slice(0, limit)
  const links = [{ href: self.toString(), rel: 'self', type: 'application/json' }]
  const last = shown[shown.length - 1]
  if (rows.length > limit && last !== undefined) {
    const next = new URL(self)
    next.searchParams.set('limit', String(limit))
    next.searchParams.set('cursor', String(last.version))
    links.push({ href: next.toString(), rel: 'next', type: 'application/json' })
  }
  return {
    id,
    versions: shown.map((r) => ({ version: r.version, operation: r.operation, recorded_at: r.recorded_at, recorded_by: r.recorded_by, feature: versionFeature(r.feature) })),
    links,
    numberReturned: shown.length
  }
}
