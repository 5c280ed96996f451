// A statement that runs past DB_STATEMENT_TIMEOUT_MS is a 503 with Retry-After that says what
// happened, and nothing is stored: never a 500. An analyst's slow trigger (plain SQL on the real
// PostGIS) plays the slow database.
import t from 'tap'
import { sql } from 'kysely'
import { backend, build, collection, expectError, feature, session } from '../helper.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only: the embedded database runs no statement timeout')
} else {
  const ctx = await build(t, { DB_STATEMENT_TIMEOUT_MS: 2000 })
  const editor = await session(ctx, 'editor', 'org-a')
  await sql`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(6); RETURN NULL; END $$`.execute(ctx.db)
  await sql`CREATE TRIGGER slow_insert AFTER INSERT ON sources FOR EACH STATEMENT EXECUTE FUNCTION slow_insert()`.execute(ctx.db)

  t.test('a POST and a dry run past the timeout: 503, nothing stored', async (t) => {
    for (const url of ['/sources', '/sources?dry_run=true']) {
      const res = await ctx.app.inject({ method: 'POST', url, headers: editor.headers, payload: collection(feature('slow')) })
      const body = expectError(t, res, 503, 'SERVICE_UNAVAILABLE')
      t.match(body.message, /did not finish this request in time/, url)
      t.equal(res.headers['retry-after'], '5')
      t.type(body.request_id, 'string')
    }

    await sql`DROP TRIGGER slow_insert ON sources`.execute(ctx.db)
    const stored = await sql<{ n: string }>`SELECT count(*) AS n FROM sources`.execute(ctx.db)
    t.equal(Number(stored.rows[0]?.n), 0, 'nothing was stored')
    const after = await ctx.app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('fast')) })
    t.equal(after.statusCode, 201, `the service goes on: ${after.body}`)
  })
}
