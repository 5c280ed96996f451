// The `db` decorator: the app's one Kysely<Database>, opened before the app exists
// (db/open.ts, by bootstrap.ts or the tests) and destroyed when the app closes.
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
  }
}

export default fp<{ db: Kysely<Database> }>(async (app, { db }) => {
  app.decorate('db', db)
  app.addHook('onClose', async () => { await db.destroy() })
}, { name: 'db', fastify: '5.x' })
