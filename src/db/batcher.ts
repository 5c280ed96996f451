// Database work batched under load. While fewer than `maxInFlight` batches are running, an
// item is sent at once, on its own: no added latency when the service is not busy. Once that
// many are running, new items wait and go out together, as one statement, when a batch
// finishes — in the time they would otherwise have spent waiting for a pooled connection.
// Fewer statements, round trips, executor start-ups and commits per request.
//
// An item never joins a statement that is already running: that statement's snapshot may
// predate the request, so a read could miss a change acknowledged before the request arrived.

interface Waiting<I, O> {
  item: I
  resolve: (value: O) => void
  reject: (err: unknown) => void
}

export interface BatcherOptions<I> {
  /** Batches running at once; an item beyond that waits for the next batch. */
  maxInFlight: number
  /** Weight of a batch at most (a single item heavier than that goes alone). */
  maxWeight: number
  /** An item's weight; 1 when not given. */
  weight?: (item: I) => number
}

export class Batcher<I, O> {
  private running = 0
  private readonly waiting: Array<Waiting<I, O>> = []

  /** `run` gets the items of a batch in arrival order and returns one result per item, in order. */
  constructor (
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: BatcherOptions<I>
  ) {}

  submit (item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject })
      this.drain()
    })
  }

  private drain (): void {
    const weigh = this.opts.weight ?? (() => 1)
    while (this.running < this.opts.maxInFlight && this.waiting.length > 0) {
      let n = 0
      let weight = 0
      for (const w of this.waiting) {
        const next = weigh(w.item)
        if (n > 0 && weight + next > this.opts.maxWeight) break
        weight += next
        n++
      }
      const batch = this.waiting.splice(0, n)
      this.running++
      this.run(batch.map((w) => w.item)).then((results) => {
        batch.forEach((w, i) => { w.resolve(results[i] as O) })
      }, (err: unknown) => {
        for (const w of batch) w.reject(err)
      }).finally(() => {
        this.running--
        this.drain()
      })
    }
  }
}
