// Batcher: items go out at once while under maxInFlight, then wait and go out together.
import t from 'tap'
import { Batcher } from '../../src/db/batcher.js'

/** A run whose batches are recorded and finished by the test; it answers "row <item>". */
function controlledRun () {
  const batches: Array<{ items: string[], finish: (err?: Error) => void }> = []
  const run = (items: string[]): Promise<string[]> => new Promise((resolve, reject) => {
    batches.push({ items, finish: (err) => { if (err) reject(err); else resolve(items.map((i) => `row ${i}`)) } })
  })
  const finish = (i: number, err?: Error) => batches[i]?.finish(err)
  return { batches, run, finish }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

t.test('under maxInFlight every item goes out on its own, at once', async (t) => {
  const { batches, run, finish } = controlledRun()
  const b = new Batcher(run, { maxInFlight: 2, maxWeight: 100 })
  const x = b.submit('a')
  const y = b.submit('b')
  t.same(batches.map((x) => x.items), [['a'], ['b']])
  finish(0); finish(1)
  t.same(await Promise.all([x, y]), ['row a', 'row b'])
})

t.test('at maxInFlight, later items wait and go out as one batch, in order, when a batch finishes', async (t) => {
  const { batches, run, finish } = controlledRun()
  const b = new Batcher(run, { maxInFlight: 1, maxWeight: 100 })
  const first = b.submit('a')
  const waiting = [b.submit('b'), b.submit('c'), b.submit('b')]
  t.same(batches.map((x) => x.items), [['a']], 'nothing else sent while one batch runs: no item joins a running one')
  finish(0)
  t.equal(await first, 'row a')
  await tick()
  t.same(batches.map((x) => x.items), [['a'], ['b', 'c', 'b']])
  finish(1)
  t.same(await Promise.all(waiting), ['row b', 'row c', 'row b'], 'each item gets the result at its own position')
})

t.test('maxWeight splits a long queue; an item heavier than it goes alone', async (t) => {
  const { batches, run, finish } = controlledRun()
  const b = new Batcher(run, { maxInFlight: 1, maxWeight: 4, weight: (i: string) => i.length })
  const all = ['a', 'bb', 'cc', 'ddddddd', 'e', 'f'].map((k) => b.submit(k))
  for (let i = 0; i < 4; i++) { finish(i); await tick() }
  t.same(batches.map((x) => x.items), [['a'], ['bb', 'cc'], ['ddddddd'], ['e', 'f']])
  t.same(await Promise.all(all), ['row a', 'row bb', 'row cc', 'row ddddddd', 'row e', 'row f'])
})

t.test('a failed batch rejects its own items only, and the next batch still goes out', async (t) => {
  const { batches, run, finish } = controlledRun()
  const b = new Batcher(run, { maxInFlight: 1, maxWeight: 100 })
  const first = b.submit('a')
  const second = b.submit('b')
  finish(0, new Error('connection lost'))
  await t.rejects(first, { message: 'connection lost' })
  await tick()
  t.same(batches.map((x) => x.items), [['a'], ['b']])
  finish(1)
  t.equal(await second, 'row b')
})
