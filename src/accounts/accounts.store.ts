// The one door from the token route and the auth plugin to the accounts' storage: the account of
// an e-mail, an account's current status, and the failed-login counters.
import type { Kysely } from 'kysely'
import type { Account, Database } from '../db/database.js'
import { type AccountStatus, findAccountByEmail, findAccountStatus } from './accounts.repository.js'
import { type FailureCount, type FailureKey, clearFailures, findFailureCounts, recordFailure } from './login-failures.repository.js'

export interface LoginFailureStore {
  /** Counts of the given keys whose window has not ended. */
  counts: (keys: string[]) => Promise<FailureCount[]>
  /** Counts one more failure under each key; answers the new counts. */
  record: (keys: FailureKey[], windowSeconds: number) => Promise<FailureCount[]>
  clear: (keys: string[]) => Promise<void>
}

export interface AccountStore {
  findByEmail: (email: string) => Promise<Account | undefined>
  status: (id: string) => Promise<AccountStatus | undefined>
  failures: LoginFailureStore
}

export function accountStore (db: Kysely<Database>): AccountStore {
  return {
    findByEmail: (email) => findAccountByEmail(db, email),
    status: (id) => findAccountStatus(db, id),
    failures: {
      counts: (keys) => findFailureCounts(db, keys),
      record: (keys, windowSeconds) => recordFailure(db, keys, windowSeconds),
      clear: (keys) => clearFailures(db, keys)
    }
  }
}
