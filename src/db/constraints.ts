// The one table from the named constraints of sql/ to what a client or an operator is told when
// one of them rejects a write. The HTTP error handler and the CLI both read it; the sources
// routes add per-feature details on top (sources/rejections.ts).
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
  sources_feature_id_length: { code: 'VALIDATION_FAILED', message: 'The feature id must be 1 to 256 characters.' },
  accounts_email_lower_key: { code: 'ACCOUNT_EXISTS', message: 'An account with this e-mail already exists.' },
  accounts_email_format: { code: 'VALIDATION_FAILED', message: 'The e-mail is not an e-mail address.' },
  accounts_organisation_not_blank: { code: 'VALIDATION_FAILED', message: 'The organisation must be 1 to 256 characters, not blank.' },
  accounts_role_known: { code: 'VALIDATION_FAILED', message: 'The role must be admin, editor or viewer.' }
}

/** The rule of the named constraint a PostgreSQL error reports, if it is one of ours. */
export function constraintRule (err: unknown): (ConstraintRule & { constraint: string }) | undefined {
  const constraint = (err as { constraint?: unknown } | null)?.constraint
  if (typeof constraint !== 'string') return undefined
  const rule = CONSTRAINTS[constraint]
  return rule === undefined ? undefined : { ...rule, constraint }
}
