// Why the database rejected a collection, per feature: after an INSERT fails on a constraint of
// `sources`, diagnoseSources evaluates each rule for each feature, and this turns the answer into
// a 409 (feature id and period already registered) or 422 (invalid polygon, period outside the
// window) with a JSON pointer per offending feature. And, for schema failures, which feature a
// pointer is in.
import { ApiError, type ErrorDetail, summarise } from '../errors.js'
import { classifyDbError } from '../db/errors.js'
import type { NewSource, SourceDiagnosis } from './sources.repository.js'

/** For a pointer into a FeatureCollection, the feature's index and client id, so errors name both. */
export function featureOf (pointer: string, body: unknown): { feature_index?: number, feature_id?: string } {
  const m = /^\/features\/(\d+)(?:\/|$)/.exec(pointer)
  if (m === null) return {}
  const index = Number(m[1])
  const features = (body as { features?: unknown } | undefined)?.features
  const id = Array.isArray(features) ? (features[index] as { id?: unknown } | undefined)?.id : undefined
  return typeof id === 'string' || Number.isSafeInteger(id) ? { feature_index: index, feature_id: String(id) } : { feature_index: index }
}

/**
 * `err` from inserting `sources`: an ApiError naming each offending feature when a constraint of
 * `sources` rejected them (`diagnose` asks the database which), otherwise `err` unchanged (the
 * error handler's constraint table and its 5xx are the backstop).
 */
export async function explainRejection (err: unknown, sources: NewSource[], diagnose: (sources: NewSource[]) => Promise<SourceDiagnosis[]>): Promise<unknown> {
  const db = classifyDbError(err)
  if (db?.kind !== 'constraint' || !db.constraint.startsWith('sources_')) return err
  const rule = db.rule
  const diagnoses = await diagnose(sources)
  const featureIdOf = (i: number): string => sources[i]?.featureId as string

  if (rule.code === 'SOURCE_CONFLICT') {
    const details: ErrorDetail[] = diagnoses.filter((d) => d.existingId !== null).map((d) => ({
      pointer: `/features/${d.index}/id`,
      message: `feature id "${featureIdOf(d.index)}" is already registered for an overlapping period as ${d.existingId as string}`,
      feature_index: d.index,
      feature_id: featureIdOf(d.index),
      existing_id: d.existingId as string
    }))
    const first = details[0]
    return new ApiError('SOURCE_CONFLICT', first !== undefined
      ? `A source with this feature id and an overlapping period already exists: ${first.existing_id as string}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}.`
      : rule.message, { details })
  }

  const geometry: ErrorDetail[] = diagnoses.filter((d) => !d.valid).map((d) => {
    const at = d.part === null ? '' : `/${d.part}`
    const where = d.ring === null ? '' : d.part === null ? ` (ring ${d.ring})` : ` (part ${d.part}, ring ${d.ring})`
    return {
      pointer: d.ring === null ? `/features/${d.index}/geometry` : `/features/${d.index}/geometry/coordinates${at}/${d.ring}`,
      message: `invalid ${d.part === null ? 'polygon' : 'multipolygon'}: ${d.reason ?? 'rejected by ST_IsValid'}${d.location ? ` at [${d.location.join(', ')}]` : ''}${where}`,
      feature_index: d.index,
      feature_id: featureIdOf(d.index),
      ...(d.reason !== null ? { reason: d.reason } : {}),
      ...(d.location !== null ? { location: d.location } : {}),
      ...(d.part !== null && d.ring !== null ? { part: d.part } : {}),
      ...(d.ring !== null ? { ring: d.ring } : {})
    }
  })
  const period: ErrorDetail[] = diagnoses.filter((d) => !d.inWindow).map((d) => ({
    pointer: `/features/${d.index}/properties`,
    message: `the period must lie within the acceptable window [${d.windowStart}, ${d.windowEnd})`,
    feature_index: d.index,
    feature_id: featureIdOf(d.index)
  }))
  const details = [...geometry, ...period].slice(0, 100)
  if (details.length === 0) return err
  return new ApiError(geometry.length > 0 ? 'INVALID_GEOMETRY' : 'INVALID_PERIOD', summarise(details), { details })
}
