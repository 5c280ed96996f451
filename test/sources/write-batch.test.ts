// A batch of writes whose reply is lost after its commit (the connection cut between COMMIT and
// its answer, as when the primary's connections are terminated): its requests are not inserted
// again one by one, where each would meet its own stored row (a duplicate key, answered 500 while
// the row stays: a write stored that no client was told of). Each gets the connection's error,
// a 503 whose retry is answered 409. The database is real; only the reply of the batch's INSERT
// is replaced by the error pg raises for a cut connection.
import t from 'tap'
import { sql } from 'kysely'
import { sourceStore } from '../../src/sources/sources.store.js'
import type { SourceInsert } from '../../src/sources/sources.repository.js'
import { addAccount, build } from '../helper.js'

t.test('a batch whose reply is lost after its commit: no request of it inserted again', async (t) => {
  const ctx = await build(t)
  const account = await addAccount(ctx.db, { role: 'editor', organisation: 'org-a' })
  let inserts = 0
  let cutQuery: unknown
  const cut = ctx.db.withPlugin({
    transformQuery: (args) => {
      const text = args.node.kind === 'RawNode' ? args.node.sqlFragments.join('?') : ''
      // The second INSERT into sources is the batch (the first request goes alone).
      if (/INSERT INTO sources/.test(text) && ++inserts === 2) cutQuery = args.queryId
      return args.node
    },
    transformResult: async (args) => {
      if (args.queryId === cutQuery) throw new Error('Connection terminated unexpectedly')
      return args.result
    }
  })
  const store = sourceStore(cut, { readsInFlight: 1, writesInFlight: 1, maxFeatures: 1000 })
  const one = (n: number): SourceInsert => ({
    owner: { organisation: 'org-a', accountId: account.id },
    sources: [{
      id: `src_batchcut${String(n).padStart(14, '0')}`,
      index: 0,
      featureId: `batch-cut-${n}`,
      geometry: { type: 'Polygon', coordinates: [[[n, 50], [n + 0.5, 50], [n + 0.5, 50.5], [n, 50.5], [n, 50]]] },
      startAt: '2024-01-01T00:00:00.000000+00:00',
      endAt: '2024-02-01T00:00:00.000000+00:00',
      attributes: '{}'
    }]
  })
  const outcomes = await Promise.allSettled([store.insert(one(1)), store.insert(one(2)), store.insert(one(3))])
  t.equal(outcomes[0]?.status, 'fulfilled', 'the first, alone, is stored and answered')
  t.same(outcomes.slice(1).map((o) => o.status === 'rejected' ? (o.reason as Error).message : 'stored'),
    ['Connection terminated unexpectedly', 'Connection terminated unexpectedly'], 'the batch\'s two get the cut connection\'s error, not a duplicate key')
  const { rows } = await sql<{ feature_id: string, n: number }>`SELECT feature_id, count(*)::int AS n FROM sources
    WHERE feature_id LIKE 'batch-cut-%' GROUP BY feature_id ORDER BY feature_id`.execute(ctx.db)
  t.same(rows, [{ feature_id: 'batch-cut-1', n: 1 }, { feature_id: 'batch-cut-2', n: 1 }, { feature_id: 'batch-cut-3', n: 1 }], 'each stored once: the batch had committed')
})
