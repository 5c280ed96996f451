// The `db` decorator: one Kysely<Database> for the app, destroyed on close. Either made here
// from DATABASE_URL, or passed in already open (the embedded backend; a stub in tests that need
// no database).
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import { connect } from '../db/connect.js'
import type { Database } from '../db/database.js'
import type { Config } from '../config.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
  }
}

export interface DbPluginOptions { config: Config, db?: Kysely<Database> }

export default fp<DbPluginOptions>(async (app, { config, db }) => {
  if (db === undefined && config.DATABASE_URL === undefined) throw new Error('no database: set DATABASE_URL or pass an open db')
  const kysely = db ?? connect({
    url: config.DATABASE_URL as string,
    poolMax: config.DB_POOL_MAX,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    onPoolError: (err) => app.log.warn({ err }, 'idle database connection lost')
  })
  app.decorate('db', kysely)
  app.addHook('onClose', async () => { await kysely.destroy() })
}, { name: 'db', fastify: '5.x' })
