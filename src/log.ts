// How errors are written to the log. PostgreSQL errors carry fields that may hold client data
// (detail: "Key (feature_id)=(…)", where: the SQL and its parameters, internalQuery): those are
// kept for debug and trace only; the message, SQLSTATE, constraint and routine always stay.
import { stdSerializers } from 'pino'

const PG_KEPT = ['type', 'message', 'stack', 'code', 'severity', 'constraint', 'table', 'column', 'dataType', 'routine'] as const

export function errorSerializer (verbose: boolean): (err: Error) => Record<string, unknown> {
  return (err) => {
    const full = stdSerializers.err(err) as unknown as Record<string, unknown>
    if (verbose || typeof (err as { severity?: unknown }).severity !== 'string') return full
    return Object.fromEntries(PG_KEPT.filter((k) => full[k] !== undefined).map((k) => [k, full[k]]))
  }
}
