// The event types are listed once in TypeScript (EVENT_TYPE_SUMMARIES in events.schema.ts); the
// database keeps its own lists, the CHECKs of sql/018_events.sql, and its triggers write types as
// literals. This test holds all of them and the AsyncAPI document to the TypeScript list, so an
// event type added to (or removed from) one place and not the others fails here.
import t from 'tap'
import { sql } from 'kysely'
import { Value } from '@sinclair/typebox/value'
import { asyncApiDocument } from '../../src/events/asyncapi.js'
import { EVENT_TYPE_SUMMARIES, EVENT_TYPES, EventTypeSchema } from '../../src/events/events.schema.js'
import { createDatabase, directDb } from '../helper.js'

const db = await directDb(t, await createDatabase(t))
const sorted = (list: Iterable<string>) => [...new Set(list)].sort()
const literals = (text: string) => [...text.matchAll(/'([a-z]+\.[a-z_]+)'/g)].map((m) => m[1] as string)
const expected = sorted(EVENT_TYPES)

t.test('the TypeScript list: each type once, with a summary, and the schema accepts exactly these', async (t) => {
  t.equal(new Set(EVENT_TYPES).size, EVENT_TYPES.length, 'no type twice')
  t.ok(EVENT_TYPES.length > 0)
  for (const type of EVENT_TYPES) {
    t.match(EVENT_TYPE_SUMMARIES[type], /\S/, `${type} has a summary`)
    t.ok(Value.Check(EventTypeSchema, type), `EventTypeSchema accepts ${type}`)
  }
  t.notOk(Value.Check(EventTypeSchema, 'source.renamed'), 'and no other')
})

t.test('the CHECKs of the database list the same types', async (t) => {
  const checks = await sql<{ conname: string, def: string }>`
    SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE conname IN ('events_type_known', 'webhook_subscriptions_types_known') ORDER BY conname`.execute(db)
  t.same(checks.rows.map((r) => r.conname), ['events_type_known', 'webhook_subscriptions_types_known'], 'both constraints exist')
  for (const { conname, def } of checks.rows) t.same(sorted(literals(def)), expected, conname)
})

t.test('the triggers write only these types, and every one of them', async (t) => {
  const bodies = await sql<{ src: string }>`
    SELECT p.prosrc AS src FROM pg_proc AS p
    WHERE p.pronamespace = 'public'::regnamespace AND p.prorettype = 'trigger'::regtype AND p.proname LIKE 'events\_%'`.execute(db)
  t.ok(bodies.rows.length > 0, 'the event trigger functions exist')
  // LIKE 'source.%' patterns are not types; literals() reads only complete a.b names.
  t.same(sorted(bodies.rows.flatMap((r) => literals(r.src))), expected)
})

t.test('the AsyncAPI document has one message per type, with its summary', async (t) => {
  const messages = (asyncApiDocument().components as { messages: Record<string, { name: string, summary: string }> }).messages
  t.same(sorted(Object.values(messages).map((m) => m.name)), expected)
  for (const m of Object.values(messages)) t.equal(m.summary, EVENT_TYPE_SUMMARIES[m.name as keyof typeof EVENT_TYPE_SUMMARIES], m.name)
})
