// RFC 7396 JSON merge patch: its media type, the merge itself, and the 415 for a PATCH sent as
// anything else. Which members a resource lets a patch change is the resource's own.
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'

export const MERGE_PATCH = 'application/merge-patch+json'

/** RFC 7396: the patch merged into the target (null removes a member; anything but an object replaces). */
export function mergePatch (target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target as Record<string, unknown> } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else out[key] = mergePatch(out[key], value)
  }
  return out
}

/** 415 for a PATCH that is not a merge patch (a plain JSON body would parse, but means something else). */
export async function mergePatchOnly (request: FastifyRequest): Promise<void> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
  if (type !== MERGE_PATCH) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type ${JSON.stringify(request.headers['content-type'] ?? '(none)')}: send ${MERGE_PATCH}.`)
}
