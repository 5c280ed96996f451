// RFC 9110's preconditions, for resources whose entity tag names their version (W/"<version>"),
// read into plain values: the versions If-Match names, whether If-None-Match names the current
// one. What a version is, and what a failed precondition answers, is the resource's own.
import { ApiError } from '../errors.js'

/**
 * The versions If-Match names: undefined for `*` (any current version) and, where it is not
 * `required`, for no header; [] when it names none this service made (so nothing matches: 412).
 * 428 without the header where it is required. Entity tags compare weakly (W/"3" and "3" name
 * version 3): the ETag is weak, see docs/decisions.md.
 */
export function ifMatch (header: string | undefined, required: boolean): number[] | undefined {
  if (header === undefined) {
    if (required) throw new ApiError('PRECONDITION_REQUIRED', 'This change needs an If-Match header with the ETag of the source as last read (GET), so that it cannot undo a change you have not seen.')
    return undefined
  }
  if (header.trim() === '*') return undefined
  return header.split(',').map((tag) => /^\s*(?:W\/)?"([1-9]\d{0,8})"\s*$/.exec(tag)?.[1]).filter((v): v is string => v !== undefined).map(Number)
}

/** Whether If-None-Match names this version (weak comparison, RFC 9110 13.1.2). */
export function notModified (header: string | undefined, version: number): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === `"${version}"`)
}
