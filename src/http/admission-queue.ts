// At most `concurrency` holders at once, the others waiting in order, at most `maxWaiting` of
// them: work that costs the database seconds (large bodies, zoomed-out tiles) waits here, holding
// nothing, instead of holding a pool connection or waiting for one past DB_CONNECT_TIMEOUT_MS.

/** A release function once a slot is held; 'full' at once when the queue is full; 'cancelled' when withdrawn while waiting. */
export type Admission = (() => void) | 'full' | 'cancelled'

export class AdmissionQueue {
  private active = 0
  private readonly waiting: Array<() => void> = []

  constructor (readonly concurrency: number, readonly maxWaiting: number) {}

  get stats (): { active: number, waiting: number } {
    return { active: this.active, waiting: this.waiting.length }
  }

  /**
   * Resolves once a slot is free, at once when one is or the queue is full. `onCancel` receives
   * a function that withdraws the waiting entry (when the client goes away); it resolves 'cancelled'.
   */
  async admit (onCancel: (cancel: () => void) => void): Promise<Admission> {
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.active--
    }
    if (this.active < this.concurrency) {
      this.active++
      return release
    }
    if (this.waiting.length >= this.maxWaiting) return 'full'
    return await new Promise((resolve) => {
      const admitted = (): void => { resolve(release) }
      this.waiting.push(admitted)
      onCancel(() => {
        const i = this.waiting.indexOf(admitted)
        if (i === -1) return
        this.waiting.splice(i, 1)
        resolve('cancelled')
      })
    })
  }
}
