// Coalescer: reads go out at once while under maxInFlight, then wait and go out together.
import t from 'tap'
import { Coalescer } from '../../src/db/coalesce.js'

function deferred<T> (): { promise: Promise<T>, resolve: (v: T) => void, reject: (e: unknown) => void } {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  return { promise, resolve, reject }
}

/** A fetch whose batches are recorded and finished by the test. */
function controlledFetch () {
  const batches: Array<{ keys: string[], done: ReturnType<typeof deferred<Map<string, string>>> }> = []
  const fetch = async (keys: string[]): Promise<Map<string, string>> => {
    const done = deferred<Map<string, string>>()
    batches.push({ keys, done })
    return done.promise
  }
  const answer = (i: number) => batches[i]?.done.resolve(new Map((batches[i]?.keys ?? []).filter((k) => !k.startsWith('missing')).map((k) => [k, `row ${k}`])))
  return { batches, fetch, answer }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

t.test('under maxInFlight every read goes out on its own, at once', async (t) => {
  const { batches, fetch, answer } = controlledFetch()
  const c = new Coalescer(fetch, { maxInFlight: 2, maxBatch: 100 })
  const a = c.load('a')
  const b = c.load('b')
  t.same(batches.map((x) => x.keys), [['a'], ['b']])
  answer(0); answer(1)
  t.same(await Promise.all([a, b]), ['row a', 'row b'])
})

t.test('at maxInFlight, later reads wait and go out as one batch when a batch finishes', async (t) => {
  const { batches, fetch, answer } = controlledFetch()
  const c = new Coalescer(fetch, { maxInFlight: 1, maxBatch: 100 })
  const first = c.load('a')
  const waiting = [c.load('b'), c.load('missing-1'), c.load('c'), c.load('b')]
  t.same(batches.map((x) => x.keys), [['a']], 'nothing else sent while one batch runs')
  t.notOk(batches.some((x) => x.keys.includes('b')), 'a waiting key never joins the running query')
  answer(0)
  t.equal(await first, 'row a')
  await tick()
  t.same(batches.map((x) => x.keys), [['a'], ['b', 'missing-1', 'c']], 'distinct keys, in arrival order, in one batch')
  answer(1)
  t.same(await Promise.all(waiting), ['row b', undefined, 'row c', 'row b'], 'a key left out reads as undefined; a repeated key gets the same row')
})

t.test('maxBatch splits a long queue', async (t) => {
  const { batches, fetch, answer } = controlledFetch()
  const c = new Coalescer(fetch, { maxInFlight: 1, maxBatch: 2 })
  const all = ['a', 'b', 'c', 'd', 'e'].map((k) => c.load(k))
  answer(0); await tick()
  t.same(batches.map((x) => x.keys), [['a'], ['b', 'c']])
  answer(1); await tick()
  answer(2); await tick()
  t.same(batches.map((x) => x.keys), [['a'], ['b', 'c'], ['d', 'e']])
  t.same(await Promise.all(all), ['row a', 'row b', 'row c', 'row d', 'row e'])
})

t.test('a failed batch rejects its own reads only, and the next batch still goes out', async (t) => {
  const { batches, fetch, answer } = controlledFetch()
  const c = new Coalescer(fetch, { maxInFlight: 1, maxBatch: 100 })
  const first = c.load('a')
  const second = c.load('b')
  batches[0]?.done.reject(new Error('connection lost'))
  await t.rejects(first, { message: 'connection lost' })
  await tick()
  t.same(batches.map((x) => x.keys), [['a'], ['b']])
  answer(1)
  t.equal(await second, 'row b')
})
