// Brute-force protection for POST /token, after OWASP's authentication guidance: failures are
// counted per (address, e-mail) pair, per address and per e-mail, in fixed windows kept in the
// database (the accounts store's `failures`), so restarts and other instances see them too.
// - A pair over LOGIN_MAX_FAILURES: 429 for that pair until its window ends. Tight, and only
//   the guesser is stopped: the account's owner elsewhere is not.
// - An address over LOGIN_ADDRESS_MAX_FAILURES (many e-mails, credential stuffing): 429 for any
//   e-mail from it.
// - An e-mail over LOGIN_EMAIL_SLOWDOWN_AFTER, from anywhere: every attempt for it is slowed,
//   250 ms doubling per further failure up to LOGIN_EMAIL_MAX_DELAY_MS, but never refused, so a
//   stranger cannot lock its owner out.
// - A wrong API key (see api-key-auth.ts) names no e-mail: it counts against its address alone,
//   the same address count as failed logins, so one address cannot spread its guesses over
//   passwords and keys.
import type { LoginFailureStore } from './accounts.store.js'
import type { FailureCount, FailureKey } from './login-failures.repository.js'

export interface LoginLimits {
  pairMaxFailures: number
  addressMaxFailures: number
  emailSlowdownAfter: number
  emailMaxDelayMs: number
  windowSeconds: number
}

export type LoginCheck =
  | { refused: true, retryAfterSeconds: number, limit: 'pair' | 'address' }
  | { refused: false, delayMs: number, pairFailures: number }

export type AddressCheck = { refused: true, retryAfterSeconds: number } | { refused: false }

const FIRST_DELAY_MS = 250

export class LoginThrottle {
  constructor (private readonly failures: LoginFailureStore, private readonly limits: LoginLimits) {}

  private keys (email: string, address: string): { pair: FailureKey, address: FailureKey, email: FailureKey } {
    const e = email.toLowerCase()
    return {
      pair: { key: `pair:${address} ${e}`, email: e, address },
      address: { key: `address:${address}`, email: null, address },
      email: { key: `email:${e}`, email: e, address: null }
    }
  }

  /** Whether this attempt may go ahead, and how long it must wait first. */
  async check (email: string, address: string): Promise<LoginCheck> {
    const keys = this.keys(email, address)
    const counts = new Map((await this.failures.counts([keys.pair.key, keys.address.key, keys.email.key])).map((c) => [c.key, c]))
    for (const [limit, max] of [['pair', this.limits.pairMaxFailures], ['address', this.limits.addressMaxFailures]] as const) {
      const c = counts.get(keys[limit].key)
      if (c !== undefined && c.failures >= max) return { refused: true, retryAfterSeconds: Math.max(1, c.retryAfterSeconds), limit }
    }
    return { refused: false, delayMs: this.delayFor(counts.get(keys.email.key)), pairFailures: counts.get(keys.pair.key)?.failures ?? 0 }
  }

  private delayFor (count: FailureCount | undefined): number {
    if (count === undefined || count.failures < this.limits.emailSlowdownAfter) return 0
    const doublings = Math.min(count.failures - this.limits.emailSlowdownAfter, 30)
    return Math.min(this.limits.emailMaxDelayMs, FIRST_DELAY_MS * 2 ** doublings)
  }

  /** Counts a failure; returns the limits this failure reached (for the log). */
  async fail (email: string, address: string): Promise<Array<'pair' | 'address' | 'email'>> {
    const keys = this.keys(email, address)
    const counts = new Map((await this.failures.record([keys.pair, keys.address, keys.email], this.limits.windowSeconds)).map((c) => [c.key, c.failures]))
    const reached: Array<'pair' | 'address' | 'email'> = []
    if (counts.get(keys.pair.key) === this.limits.pairMaxFailures) reached.push('pair')
    if (counts.get(keys.address.key) === this.limits.addressMaxFailures) reached.push('address')
    if (counts.get(keys.email.key) === this.limits.emailSlowdownAfter) reached.push('email')
    return reached
  }

  /** Whether an address is over LOGIN_ADDRESS_MAX_FAILURES (failed logins and failed keys together). */
  async checkAddress (address: string): Promise<AddressCheck> {
    const key = this.keys('', address).address
    const count = (await this.failures.counts([key.key]))[0]
    return count !== undefined && count.failures >= this.limits.addressMaxFailures
      ? { refused: true, retryAfterSeconds: Math.max(1, count.retryAfterSeconds) }
      : { refused: false }
  }

  /** Counts a failure of an address alone (a wrong API key); says whether the address is now over its limit. */
  async failAddress (address: string): Promise<AddressCheck> {
    const key = this.keys('', address).address
    const count = (await this.failures.record([key], this.limits.windowSeconds))[0]
    return count !== undefined && count.failures >= this.limits.addressMaxFailures
      ? { refused: true, retryAfterSeconds: Math.max(1, count.retryAfterSeconds) }
      : { refused: false }
  }

  /** A successful login forgets its own pair's failures (not the e-mail's: that would help a guesser). */
  async succeed (email: string, address: string): Promise<void> {
    await this.failures.clear([this.keys(email, address).pair.key])
  }
}
