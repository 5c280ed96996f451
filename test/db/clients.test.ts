// The server backend's pg clients (src/db/prepared-client.ts), as Kysely and pg's pool call them:
// with prepared statements (DB_POOL_MODE=session) a parameterised statement is prepared once per
// connection under its sr_ name, whether it comes as a promise (Kysely) or with a callback (the
// pool's query); without (transaction pooling) none is; answers and errors are pg's either way.
// Server backend only: the embedded database has no pg client.
import t from 'tap'
import { sql } from 'kysely'
import { connect } from '../../src/db/connect.js'
import { backend, createDatabase } from '../helper.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only: the embedded database runs no pg client')
} else {
  const url = await createDatabase(t, { empty: true })
  for (const prepared of [true, false]) {
    t.test(prepared ? 'prepared statements (session pooling)' : 'unnamed statements (transaction pooling)', async (t) => {
      // One connection, so that what it prepared is what pg_prepared_statements lists.
      const db = connect({ url, poolMax: 1, preparedStatements: prepared, transactionPooler: !prepared })
      t.teardown(() => db.destroy())
      const named = async () => (await sql<{ name: string, statement: string }>`SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(db)).rows

      const text = 'SELECT $1::int + 1 AS next, $2::text AS word'
      for (const n of [1, 2, 3]) {
        const { rows } = await db.executeQuery<{ next: number, word: string }>({ sql: text, parameters: [n, `w${n}`], query: { kind: 'RawNode' } as never, queryId: { queryId: String(n) } })
        t.same(rows, [{ next: n + 1, word: `w${n}` }], `answer ${n} through Kysely`)
      }
      const afterKysely = (await named()).filter((r) => r.statement === text)
      t.equal(afterKysely.length, prepared ? 1 : 0, prepared ? 'prepared once, used three times' : 'never prepared')
      if (prepared) t.match(afterKysely[0]?.name, /^sr_[\w-]+$/, 'under its sr_ name')

      // pg's pool with a callback: the same name, the same answer.
      const { poolOf } = await import('../../src/db/connect.js')
      const pool = poolOf(db) as unknown as { query: (text: string, values: unknown[], cb: (err: Error | null, res: { rows: unknown[] }) => void) => void }
      const other = 'SELECT $1::int + 2 AS next, $2::text AS word'
      for (const n of [40, 41]) {
        const viaCallback = await new Promise<unknown[]>((resolve, reject) => { pool.query(other, [n, 'cb'], (err, res) => { if (err !== null && err !== undefined) reject(err); else resolve(res.rows) }) })
        t.same(viaCallback, [{ next: n + 2, word: 'cb' }], `the pool's callback form answers (${n})`)
      }
      t.equal((await named()).filter((r) => r.statement === other).length, prepared ? 1 : 0, prepared ? 'and is prepared once too' : 'and prepares nothing')

      // An error rejects with pg's fields, so db/errors.ts can map it.
      const failed = await db.executeQuery({ sql: 'SELECT 1 / $1::int AS q', parameters: [0], query: { kind: 'RawNode' } as never, queryId: { queryId: 'e' } }).then(() => undefined, (err: unknown) => err as { code?: string, message?: string })
      t.match(failed, { code: '22012', message: /division by zero/ }, 'division by zero: SQLSTATE 22012')
      // The connection is usable after the error.
      const again = await db.executeQuery<{ next: number }>({ sql: text, parameters: [7, 'x'], query: { kind: 'RawNode' } as never, queryId: { queryId: 'a' } })
      t.same(again.rows, [{ next: 8, word: 'x' }], 'the next statement answers')
      // An error through the pool's callback form reaches its callback.
      const viaCallbackError = await new Promise<{ code?: string }>((resolve) => { pool.query('SELECT 1 / $1::int AS q', [0], (err) => { resolve(err as { code?: string }) }) })
      t.match(viaCallbackError, { code: '22012' }, 'an error through the callback form')
      // A parameterless statement runs as before (simple protocol, never named).
      const plain = await sql<{ one: number }>`SELECT 1 AS one`.execute(db)
      t.same(plain.rows, [{ one: 1 }], 'a statement without parameters')
    })
  }

  t.test('transaction pooling: the client\'s own statement timeout (pg\'s query_timeout) rejects a statement that runs past it', async (t) => {
    const db = connect({ url, poolMax: 1, preparedStatements: false, transactionPooler: true, statementTimeoutMs: 200 })
    t.teardown(() => db.destroy())
    const started = Date.now()
    const err = await db.executeQuery({ sql: 'SELECT pg_sleep($1::float8)', parameters: [2], query: { kind: 'RawNode' } as never, queryId: { queryId: 't' } }).then(() => undefined, (e: unknown) => e as Error)
    t.match(err, { message: /Query read timeout/ }, 'rejected by the timeout')
    t.ok(Date.now() - started < 1_800, 'before the statement (two seconds) would have ended')
  })
}
