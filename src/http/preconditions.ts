// RFC 9110's preconditions, for resources whose entity tag names their version (W/"<version>"),
// read into plain values: the versions If-Match names, whether If-None-Match names the current
// one. What a version is, and what a failed precondition answers, is the resource's own.
import { ApiError } from '../errors.js'

// RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE (etagc: visible ASCII but '"', and
// obs-text). A comma inside a tag cannot occur, so a list splits on commas.
const ENTITY_TAG = /^\s*(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*$/

/**
 * The versions If-Match names: undefined for `*` (any current version) and, where it is not
 * `required`, for no header; [] when it names none this service made (so nothing matches: 412).
 * 428 without the header where it is required; 400 when a member is not an entity tag at all
 * (`1` for `W/"1"`), which would otherwise read as a change made since. Entity tags compare
 * weakly (W/"3" and "3" name version 3): the ETag is weak, see docs/decisions.md.
 */
export function ifMatch (header: string | undefined, required: boolean): number[] | undefined {
  if (header === undefined) {
    if (required) throw new ApiError('PRECONDITION_REQUIRED', 'This change needs an If-Match header with the ETag of the source as last read (GET), so that it cannot undo a change you have not seen.')
    return undefined
  }
  if (header.trim() === '*') return undefined
  const tags = header.split(',').map((tag) => {
    const opaque = ENTITY_TAG.exec(tag)?.[1]
    if (opaque === undefined) {
      const bare = tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '')
      const example = /^[1-9]\d{0,8}$/.test(bare) ? `W/"${bare}"` : 'W/"1"'
      throw new ApiError('VALIDATION_FAILED', `If-Match ${JSON.stringify(tag.trim())} is not an entity tag: send the ETag as the GET gave it, quotes included, such as ${example} (or * for any version).`)
    }
    return opaque
  })
  return tags.filter((v) => /^[1-9]\d{0,8}$/.test(v)).map(Number)
}

/**
 * Whether If-None-Match names this version (weak comparison, RFC 9110 13.1.2). A member that is
 * not an entity tag names nothing: the full answer is sent, never a wrong 304 nor a refusal of a
 * read (a cache's odd header costs a download, not an error).
 */
export function notModified (header: string | undefined, version: number): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === `"${version}"`)
}
