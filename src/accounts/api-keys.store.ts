// The one door from the API-key routes and the auth plugin to the keys' storage.
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import {
  type ApiKeyCredential, type ApiKeyRow, type NewApiKeyRow,
  findApiKeyCredential, insertApiKey, listApiKeys, revokeApiKey, touchApiKey
} from './api-keys.repository.js'

export interface ApiKeyStore {
  /** Stores a new key; undefined when its account already holds `maxActive` keys in force. */
  create: (key: NewApiKeyRow, maxActive: number) => Promise<ApiKeyRow | undefined>
  /** The keys not revoked: one account's, or (undefined) every account's. */
  list: (accountId: string | undefined) => Promise<ApiKeyRow[]>
  credential: (id: string) => Promise<ApiKeyCredential | undefined>
  /** Revokes one key (of `ownerId` only, unless undefined); undefined when there is no such key in force. */
  revoke: (id: string, by: string, ownerId: string | undefined) => Promise<ApiKeyRow | undefined>
  /** Records a use, unless one within `withinSeconds` is recorded already. */
  touch: (id: string, withinSeconds: number) => Promise<void>
}

export function apiKeyStore (db: Kysely<Database>): ApiKeyStore {
  return {
    create: (key, maxActive) => insertApiKey(db, key, maxActive),
    list: (accountId) => listApiKeys(db, accountId),
    credential: (id) => findApiKeyCredential(db, id),
    revoke: (id, by, ownerId) => revokeApiKey(db, id, by, ownerId),
    touch: (id, withinSeconds) => touchApiKey(db, id, withinSeconds)
  }
}
