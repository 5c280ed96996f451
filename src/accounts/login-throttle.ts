// Brute-force protection for POST /token: counts failed logins per e-mail and per client
// address in a fixed window; once either reaches the limit, logins are refused with 429 and
// Retry-After until the window ends, whether the password is right or not. @fastify/rate-limit
// counts every request, not failures, so this small counter is our own.
import { LRUCache } from 'lru-cache'

interface Window { failures: number, resetAt: number }

export class LoginThrottle {
  private readonly windows: LRUCache<string, Window>
  constructor (private readonly maxFailures: number, private readonly windowMs: number) {
    this.windows = new LRUCache({ max: 100_000, ttl: windowMs })
  }

  /** Seconds until a login may be tried again for this e-mail or address, or 0 if it may now. */
  retryAfter (keys: string[], now = Date.now()): number {
    let wait = 0
    for (const key of keys) {
      const w = this.windows.get(key)
      if (w !== undefined && w.failures >= this.maxFailures && w.resetAt > now) wait = Math.max(wait, Math.ceil((w.resetAt - now) / 1000))
    }
    return wait
  }

  fail (keys: string[], now = Date.now()): void {
    for (const key of keys) {
      const w = this.windows.get(key)
      if (w === undefined || w.resetAt <= now) this.windows.set(key, { failures: 1, resetAt: now + this.windowMs })
      else w.failures++
    }
  }

  succeed (key: string): void {
    this.windows.delete(key)
  }
}
