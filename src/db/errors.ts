// The one reading of PostgreSQL's errors: a named constraint of sql/ (what the client is told),
// a data exception (the client's value), a statement timeout, the database being unreachable,
// and the one-line fix for a transaction pooler met with a session's settings. The HTTP error
// handler and the CLI both ask classifyDbError; the sources routes add per-feature details on
// top (sources/rejections.ts).
import type { ErrorCode } from '../errors.js'

export interface ConstraintRule { code: ErrorCode, message: string }

export const CONSTRAINTS: Record<string, ConstraintRule> = {
  sources_geom_valid: { code: 'INVALID_GEOMETRY', message: 'The polygon is not valid (ST_IsValid).' },
  sources_geom_not_empty: { code: 'INVALID_GEOMETRY', message: 'The polygon is empty.' },
  sources_period_not_empty: { code: 'INVALID_PERIOD', message: 'start_at must be strictly before end_at.' },
  sources_period_start_before_end: { code: 'INVALID_PERIOD', message: 'start_at must be strictly before end_at.' },
  sources_period_finite: { code: 'INVALID_PERIOD', message: 'start_at and end_at must both be finite.' },
  sources_period_bounds: { code: 'INVALID_PERIOD', message: 'The period must include its start and exclude its end ([start_at, end_at)).' },
  sources_period_in_window: { code: 'INVALID_PERIOD', message: 'The period is outside the acceptable window.' },
  sources_feature_period_excl: { code: 'SOURCE_CONFLICT', message: 'A source with this feature id and an overlapping period already exists.' },
  sources_attributes_size: { code: 'ATTRIBUTES_TOO_LARGE', message: 'The attributes are larger than 16,384 bytes of JSON text (sources_attributes_fit).' },
  sources_attributes_object: { code: 'VALIDATION_FAILED', message: 'The attributes must be a JSON object.' },
  sources_feature_id_length: { code: 'VALIDATION_FAILED', message: 'The feature id must be 1 to 256 characters.' },
  accounts_email_lower_key: { code: 'ACCOUNT_EXISTS', message: 'An account with this e-mail already exists.' },
  accounts_email_format: { code: 'VALIDATION_FAILED', message: 'The e-mail is not an e-mail address.' },
  accounts_organisation_not_blank: { code: 'VALIDATION_FAILED', message: 'The organisation must be 1 to 256 characters, not blank.' },
  accounts_role_known: { code: 'VALIDATION_FAILED', message: 'The role must be admin, editor or viewer.' },
  api_keys_name_not_blank: { code: 'VALIDATION_FAILED', message: 'The key\'s name must be 1 to 100 characters, not blank.' },
  api_keys_scope_known: { code: 'VALIDATION_FAILED', message: 'The key\'s scope must be read or write.' },
  api_keys_expires_after_created: { code: 'INVALID_EXPIRY', message: 'expires_at must be in the future.' },
  sources_conflict_keys: { code: 'CONFLICT_KEYS_REQUIRED', message: 'This write would start conflicts with other organisations\' sources: cite their conflict keys (on_conflict=acknowledge, Conflict-Keys).' },
  conflict_stance_transition: { code: 'STANCE_NOT_ALLOWED', message: 'This stance change is not allowed from the party\'s current stance (or the conflict is resolved).' },
  conflicts_dispute_reason: { code: 'VALIDATION_FAILED', message: 'Disputing a conflict needs a reason.' },
  conflict_notes_body_length: { code: 'VALIDATION_FAILED', message: 'A note must be 1 to 4000 characters, not blank.' },
  source_purges_reason_not_blank: { code: 'VALIDATION_FAILED', message: 'A purge needs a reason (--reason), not blank.' }
}

export type DbErrorClass =
  /** One of our named constraints rejected the write. */
  | { kind: 'constraint', constraint: string, rule: ConstraintRule }
  /** A data exception (SQLSTATE class 22) on input that passed our checks: still the client's data. */
  | { kind: 'data' }
  /** A statement ran past DB_STATEMENT_TIMEOUT_MS (or an operator cancelled it). */
  | { kind: 'timeout' }
  /** The database is not there right now: retry later. */
  | { kind: 'unavailable' }

const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN'])
// A server shutting down, starting up or out of connections; class 08 is connection errors.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400'])
// pg's own errors for a pool that cannot connect carry no code, only these messages.
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|Connection refused/i

const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** What kind of database error `err` is, or undefined when it is not one we know. */
export function classifyDbError (err: unknown): DbErrorClass | undefined {
  const constraint = (err as { constraint?: unknown } | null)?.constraint
  if (typeof constraint === 'string') {
    const rule = CONSTRAINTS[constraint]
    if (rule !== undefined) return { kind: 'constraint', constraint, rule }
  }
  if (!(err instanceof Error)) return undefined
  const code = codeOf(err)
  // pg's query_timeout behind a transaction pooler says this instead of 57014.
  if (code === '57014' || err.message === 'Query read timeout') return { kind: 'timeout' }
  // `severity` tells a PostgreSQL error from Node's own errors, whose codes are not SQLSTATEs.
  if ((err as { severity?: unknown }).severity !== undefined && code?.startsWith('22') === true) return { kind: 'data' }
  if (code !== undefined && (CONNECTION_ERRNOS.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) return { kind: 'unavailable' }
  if (UNAVAILABLE_MESSAGES.test(err.message)) return { kind: 'unavailable' }
  return undefined
}

/**
 * What a transaction-pooling PgBouncer answers a client configured for a direct connection
 * (startup parameters it does not track; named statements meeting another session): the fix,
 * in one line, for the logs and the CLI.
 */
export function poolerHint (err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined
  return /unsupported startup parameter|prepared statement "sr_[^"]*" (already exists|does not exist)/.test(err.message)
    ? 'DATABASE_URL leads to a transaction-pooling PgBouncer: set DB_POOL_MODE=transaction'
    : undefined
}
