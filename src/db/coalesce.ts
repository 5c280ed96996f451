// Reads by key, coalesced under load. While fewer than `maxInFlight` batches are running, a
// read is sent at once, on its own: no added latency when the service is not busy. Once that
// many are running, new keys wait and go out together, as one query, when a batch finishes —
// the time they would otherwise have spent waiting for a pooled connection. Fewer statements,
// round trips and executor start-ups per request than one query per key.
//
// A read never joins a query that is already running: that query's snapshot may predate the
// request, so it could miss a change (a DELETE) acknowledged before the request arrived.

interface Waiter<V> {
  resolve: (value: V | undefined) => void
  reject: (err: unknown) => void
}

export interface CoalescerOptions {
  /** Batches running at once; a read beyond that waits for the next batch. */
  maxInFlight: number
  /** Keys per batch at most. */
  maxBatch: number
}

export class Coalescer<K, V> {
  private running = 0
  private readonly waiting = new Map<K, Array<Waiter<V>>>()

  /** `fetch` gets distinct keys and returns what it found; a key it leaves out reads as undefined. */
  constructor (
    private readonly fetch: (keys: K[]) => Promise<Map<K, V>>,
    private readonly opts: CoalescerOptions
  ) {}

  load (key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key)
      if (waiters !== undefined) waiters.push({ resolve, reject })
      else this.waiting.set(key, [{ resolve, reject }])
      this.drain()
    })
  }

  private drain (): void {
    while (this.running < this.opts.maxInFlight && this.waiting.size > 0) {
      const batch = new Map<K, Array<Waiter<V>>>()
      for (const [key, waiters] of this.waiting) {
        if (batch.size === this.opts.maxBatch) break
        batch.set(key, waiters)
      }
      for (const key of batch.keys()) this.waiting.delete(key)
      this.running++
      this.fetch([...batch.keys()]).then((found) => {
        for (const [key, waiters] of batch) for (const w of waiters) w.resolve(found.get(key))
      }, (err: unknown) => {
        for (const waiters of batch.values()) for (const w of waiters) w.reject(err)
      }).finally(() => {
        this.running--
        this.drain()
      })
    }
  }
}
