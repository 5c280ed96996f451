// "The database is not there right now" (503, retry), told apart from "the query is wrong".
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN'])
// SQLSTATEs of a server shutting down, starting up or out of connections; class 08 is connection errors.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400'])
// pg's own errors for a pool that cannot connect carry no code, only these messages.
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|Connection refused/i

export function isDatabaseUnavailable (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string' && (CONNECTION_ERRNOS.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) return true
  return UNAVAILABLE_MESSAGES.test(err.message)
}

/**
 * A statement that ran past DB_STATEMENT_TIMEOUT_MS: cancelled by PostgreSQL (57014, also an
 * operator's pg_cancel_backend), or by pg's query_timeout behind a transaction pooler.
 */
export function isStatementTimeout (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  return (err as { code?: unknown }).code === '57014' || err.message === 'Query read timeout'
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
