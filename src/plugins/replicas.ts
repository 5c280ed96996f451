// Read replicas in the request's life (ops/replicas.ts): each request carries its X-Min-LSN and
// account to the sources store (an AsyncLocalStorage entered just before the handler, once the
// account is known and the body read), and a request that wrote answers the write's LSN in
// X-Min-LSN. Without DATABASE_REPLICA_URLS it adds nothing. The replicas' pools close with the app.
import { AsyncResource } from 'node:async_hooks'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { DatabaseConfig } from '../config.js'
import type { Database } from '../db/database.js'
import { splitConnectionList } from '../connection-string.js'
import { openDatabase } from '../db/open.js'
import type { Metrics } from '../ops/metrics.js'
import { type ReadContext, Replica, Replicas, formatLsn, parseLsn, readContext } from '../ops/replicas.js'

export const MIN_LSN_HEADER = 'x-min-lsn'

/** The replicas of DATABASE_REPLICA_URLS, opened and checked from now on; undefined without any. */
export async function openReplicas (config: DatabaseConfig, primary: Kysely<Database>, metrics: Metrics, log: ReplicaLog): Promise<Replicas | undefined> {
  const urls = splitConnectionList(config.DATABASE_REPLICA_URLS ?? '')
  if (urls.length === 0) return undefined
  const list = await Promise.all(urls.map(async (url, i) => {
    const name = `replica-${i + 1}`
    const { db } = await openDatabase({ ...config, DATABASE_URL: url }, { onPoolError: (err) => log.warn({ err, replica: name }, 'replica connection lost') })
    metrics.addPool(name, db)
    return new Replica(name, db)
  }))
  const replicas = new Replicas(primary, list, { maxLagMs: config.REPLICA_MAX_LAG_MS, maxWaitMs: config.REPLICA_MAX_WAIT_MS, checkMs: config.REPLICA_CHECK_MS, log, metrics })
  replicas.start()
  return replicas
}

type ReplicaLog = { warn: (obj: object, msg: string) => void, info: (obj: object, msg: string) => void }

export default fp<{ replicas: Replicas | undefined }>(async (app, { replicas }) => {
  if (replicas === undefined) return
  const contexts = new WeakMap<FastifyRequest, ReadContext>()
  app.addHook('preHandler', (request, _reply, done) => {
    const header = request.headers[MIN_LSN_HEADER]
    const ctx: ReadContext = { minLsn: parseLsn(typeof header === 'string' ? header : undefined), accountId: () => request.account?.id, written: undefined }
    contexts.set(request, ctx)
    readContext.run(ctx, done)
  })
  app.addHook('onSend', async (request, reply, payload) => {
    const written = contexts.get(request)?.written
    if (written !== undefined) void reply.header(MIN_LSN_HEADER, formatLsn(written))
    // A streamed body (a large items page) reads its later chunks when the socket drains, in the
    // socket's async context, not the request's: its _read is bound to the request's, so that
    // every chunk's read carries the request's X-Min-LSN and account.
    const stream = payload as { _read?: unknown } | null
    if (stream !== null && typeof stream === 'object' && typeof stream._read === 'function') {
      stream._read = AsyncResource.bind(stream._read as (...args: unknown[]) => unknown, 'SourceRegistryRead', stream)
    }
    return payload
  })
  app.addHook('onClose', async () => { await replicas.stop() })
}, { name: 'replicas', fastify: '5.x' })
