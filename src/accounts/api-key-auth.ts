// Checking an API key on a request, without a database round trip on most of them:
// - A key's row (account, scope, SHA-256 of its secret, expiry, revoked or not) is cached per
//   instance for ACCOUNT_CACHE_TTL_SECONDS, like an account's status, so a revocation made on
//   another instance is seen here within that TTL (at once on the instance that revoked it).
//   The secret is compared with the cached hash on every request, and the expiry read against
//   the clock on every request: those need no refresh.
// - A wrong key (unknown id, wrong secret, not a key at all) counts against its address in the
//   login throttle (login-throttle.ts). An address over LOGIN_ADDRESS_MAX_FAILURES is refused
//   (429) for any key this instance has not already verified, until its window ends.
// - The last use is written at most once per API_KEY_LAST_USED_INTERVAL_SECONDS per key and
//   instance, after the answer and never in its way.
import type { FastifyBaseLogger } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { ApiKeyCredential } from './api-keys.repository.js'
import type { ApiKeyStore } from './api-keys.store.js'
import { parseApiKey, secretMatches } from './api-key-format.js'
import type { LoginThrottle } from './login-throttle.js'

export type KeyCheck =
  | { ok: true, key: ApiKeyCredential }
  /** Not a key of ours: counted against the address. */
  | { ok: false, reason: 'invalid' }
  /** The right secret of a key that no longer works: not a guess, so not counted. */
  | { ok: false, reason: 'revoked' | 'expired', key: ApiKeyCredential }
  | { ok: false, reason: 'throttled', retryAfterSeconds: number }

export interface KeyAuthOptions {
  cacheTtlSeconds: number
  lastUsedIntervalSeconds: number
  log: FastifyBaseLogger
}

export class ApiKeyAuthenticator {
  private readonly cache: LRUCache<string, ApiKeyCredential | false> | undefined
  /** Addresses over their limit, until their window ends (ms since the epoch). */
  private readonly refused = new LRUCache<string, number>({ max: 10_000 })
  /** When this instance last recorded each key's use (ms since the epoch). */
  private readonly touched = new LRUCache<string, number>({ max: 100_000 })
  private readonly pending = new Set<Promise<void>>()

  constructor (private readonly store: ApiKeyStore, private readonly throttle: LoginThrottle, private readonly options: KeyAuthOptions) {
    // ACCOUNT_CACHE_TTL_SECONDS = 0 turns the cache off: every request reads the key.
    this.cache = options.cacheTtlSeconds > 0
      ? new LRUCache({ max: 100_000, ttl: options.cacheTtlSeconds * 1000 })
      : undefined
  }

  /** The key's row, from the cache or the database; false when there is none. */
  private async load (id: string): Promise<ApiKeyCredential | false> {
    const cached = this.cache?.get(id)
    if (cached !== undefined) return cached
    const found = (await this.store.credential(id)) ?? false
    this.cache?.set(id, found)
    return found
  }

  /** Checks a key presented by a client at `address`. */
  async verify (key: string, address: string): Promise<KeyCheck> {
    const parsed = parseApiKey(key)
    const cached = parsed === undefined ? undefined : this.cache?.get(parsed.id)
    // The usual request: a key verified here within the TTL, its secret right.
    if (parsed !== undefined && cached !== undefined && cached !== false && secretMatches(parsed.secret, cached.secretSha256)) return this.usable(cached)
    // Anything else is a wrong key or needs the database: the address's limit first.
    const until = this.refused.get(address)
    if (until !== undefined && until > Date.now()) return { ok: false, reason: 'throttled', retryAfterSeconds: Math.ceil((until - Date.now()) / 1000) }
    if (parsed === undefined || cached !== undefined) return this.failed(address)
    const check = await this.throttle.checkAddress(address)
    if (check.refused) return this.refuse(address, check.retryAfterSeconds)
    const found = await this.load(parsed.id)
    if (found === false || !secretMatches(parsed.secret, found.secretSha256)) return this.failed(address)
    return this.usable(found)
  }

  /** The key of an OAuth2 token (no secret: the token's signature stands for it), as it is now. */
  async current (id: string): Promise<KeyCheck> {
    const found = await this.load(id)
    return found === false ? { ok: false, reason: 'invalid' } : this.usable(found)
  }

  private usable (key: ApiKeyCredential): KeyCheck {
    if (key.revoked) return { ok: false, reason: 'revoked', key }
    if (key.expiresAt !== null && key.expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'expired', key }
    return { ok: true, key }
  }

  private async failed (address: string): Promise<KeyCheck> {
    const check = await this.throttle.failAddress(address)
    return check.refused ? this.refuse(address, check.retryAfterSeconds) : { ok: false, reason: 'invalid' }
  }

  private refuse (address: string, retryAfterSeconds: number): KeyCheck {
    this.refused.set(address, Date.now() + retryAfterSeconds * 1000)
    return { ok: false, reason: 'throttled', retryAfterSeconds }
  }

  /** A key revoked here: refused here at once (other instances within the cache TTL). */
  forget (id: string): void {
    this.cache?.delete(id)
  }

  /** Records that a key authenticated a request, at most once per interval; never waits for it. */
  used (id: string): void {
    const now = Date.now()
    const last = this.touched.get(id)
    const interval = this.options.lastUsedIntervalSeconds * 1000
    if (last !== undefined && now - last < interval) return
    this.touched.set(id, now)
    const write = this.store.touch(id, this.options.lastUsedIntervalSeconds)
      .catch((err: unknown) => { this.options.log.warn({ err, keyId: id }, 'could not record an API key\'s last use') })
      .finally(() => { this.pending.delete(write) })
    this.pending.add(write)
  }

  /** Waits for the last-use writes under way (before the database closes). */
  async flush (): Promise<void> {
    await Promise.all([...this.pending])
  }
}
