// The embedded database on a loopback PostgreSQL port (EMBEDDED_SQL_PORT), so that psql, QGIS and
// DBeaver reach it while the service runs. The wire protocol is @electric-sql/pglite-socket's; the
// session is shared with the service through EmbeddedSession. The socket server is handed a view of
// PGlite whose runExclusive first takes the session, and keeps it until PostgreSQL's ReadyForQuery
// says idle ('Z', status 'I'), so an analyst's transaction, extended-protocol exchange or COPY is
// never interleaved with the service's statements (the view relies on the five members of PGlite
// that pglite-socket 0.2.11, pinned, calls).
import type { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import type { EmbeddedSession } from './embedded-session.js'

/** Clients connected at once; they share the one session, one statement at a time. */
export const EMBEDDED_SQL_MAX_CONNECTIONS = 8

const READY_FOR_QUERY = 0x5a // 'Z', Int32 5, then the transaction status
const IDLE = 0x49 // 'I'
const PROTOCOL_3 = 196608
// What a client leaving mid-exchange leaves behind is ended with a CopyFail (ignored outside
// COPY FROM STDIN), a Sync (ends an extended-protocol exchange), then ROLLBACK when in a transaction.
const COPY_FAIL = new Uint8Array([0x66, 0, 0, 0, 5, 0]) // 'f', Int32 5, ""
const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]) // 'S', Int32 4
// The frontend messages of protocol 3.0 after start-up. PGlite's one backend treats any other
// type as lost synchronisation (FATAL) and then spins: the whole process would hang.
const FRONTEND_TYPES = new Set([...'BCdcfDEHFPpQSX'].map((c) => c.charCodeAt(0)))

function wellFormed (message: Uint8Array): boolean {
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength)
  if (message[0] === 0) return message.length >= 8 && view.getInt32(0) === message.length && view.getInt32(4) === PROTOCOL_3
  return message.length >= 5 && FRONTEND_TYPES.has(message[0] as number) && view.getInt32(1) === message.length - 1
}

// PGlite exits (the whole process with it) on COPY … FROM STDIN through the wire protocol;
// COPY … TO STDOUT (psql's \copy … to) works.
const COPY_FROM_STDIN = /\bcopy\b[^;]*\bfrom\s+stdin\b/i

function isCopyFromStdin (message: Uint8Array): boolean {
  const type = String.fromCharCode(message[0] as number)
  return (type === 'Q' || type === 'P') && COPY_FROM_STDIN.test(Buffer.from(message.subarray(5)).toString('utf8'))
}

// ErrorResponse: FATAL (clients close the connection on it) or ERROR (then ReadyForQuery).
function errorResponse (severity: 'FATAL' | 'ERROR', code: string, message: string): Buffer {
  const fields = Buffer.from(`S${severity}\0V${severity}\0C${code}\0M${message}\0\0`)
  const head = Buffer.alloc(5)
  head.write('E')
  head.writeInt32BE(4 + fields.length, 1)
  return Buffer.concat([head, fields])
}

type RawStreamOptions = Parameters<PGlite['execProtocolRawStream']>[1]

export interface EmbeddedSqlServer {
  port: number
  /** Stops listening, disconnects the clients (rolling back what they left open) and frees the session. */
  close: () => Promise<void>
}

function analystView (pg: PGlite, session: EmbeddedSession) {
  let held: (() => void) | undefined
  // The last six bytes sent to the clients: idle when they are ReadyForQuery with status 'I'.
  let last = new Uint8Array(0)
  const idle = (): boolean => last.length === 6 && last[0] === READY_FOR_QUERY && last[4] === 5 && last[5] === IDLE
  const handOn = (): void => { held?.(); held = undefined }
  // The client holding the session left mid-exchange, or sent what PGlite cannot take.
  const cleanUp = async (): Promise<void> => {
    try {
      await pg.runExclusive(async () => {
        await pg.execProtocolRaw(COPY_FAIL)
        await pg.execProtocolRaw(SYNC)
      })
      if (pg.isInTransaction()) await pg.exec('ROLLBACK')
    } finally {
      last = new Uint8Array([READY_FOR_QUERY, 0, 0, 0, 5, IDLE])
      handOn()
    }
  }
  return {
    waitReady: pg.waitReady,
    // Read by pglite-socket as "the last client's transaction is open": keep its statements first.
    isInTransaction: (): boolean => held !== undefined,
    async runExclusive<T> (fn: () => Promise<T>): Promise<T> {
      held ??= await session.acquireForAnalyst()
      try {
        return await pg.runExclusive(fn)
      } catch (err) {
        await cleanUp()
        throw err
      } finally {
        if (idle()) handOn()
      }
    },
    async execProtocolRawStream (message: Uint8Array, options: RawStreamOptions): Promise<void> {
      const onRawData = (data: Uint8Array): void => {
        const joined = new Uint8Array(last.length + data.length)
        joined.set(last)
        joined.set(data, last.length)
        last = joined.slice(-6)
        options.onRawData(data)
      }
      if (!wellFormed(message)) {
        options.onRawData(new Uint8Array(errorResponse('FATAL', '08P01', 'not a PostgreSQL protocol 3.0 message')))
        return
      }
      if (isCopyFromStdin(message)) {
        const refusal = errorResponse(message[0] === 0x51 ? 'ERROR' : 'FATAL', '0A000', 'COPY FROM STDIN is not supported by the embedded database (PGlite); use INSERT, or a PostGIS server')
        const status = last[0] === READY_FOR_QUERY ? last[5] as number : IDLE
        onRawData(new Uint8Array(message[0] === 0x51 ? Buffer.concat([refusal, Buffer.from([READY_FOR_QUERY, 0, 0, 0, 5, status])]) : refusal))
        return
      }
      await pg.execProtocolRawStream(message, { ...options, onRawData })
    },
    // Called as exec('ROLLBACK') when the client holding the session goes away.
    exec: cleanUp
  }
}

/** Serves `pg` on 127.0.0.1:`port` (0: any free port). */
export async function serveEmbeddedSql (pg: PGlite, session: EmbeddedSession, port: number): Promise<EmbeddedSqlServer> {
  // `as never`: the view implements the members of PGlite the socket server calls, not the class.
  const server = new PGLiteSocketServer({ db: analystView(pg, session) as never, host: '127.0.0.1', port, maxConnections: EMBEDDED_SQL_MAX_CONNECTIONS })
  await server.start()
  const bound = Number(server.getServerConn().split(':').pop())
  return {
    port: bound,
    close: async () => {
      await server.stop()
    }
  }
}
