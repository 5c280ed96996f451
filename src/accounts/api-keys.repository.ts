// SQL for API keys (sql/013_api_keys.sql). Functions take the Kysely handle (or a transaction)
// first; callers own it. Columns are listed, never *: the service prepares these statements.
import { sql } from 'kysely'
import type { Db, KeyScope } from '../db/database.js'

/** A key as its owner sees it: never the secret, nor its hash. */
export interface ApiKeyRow {
  id: string
  account_id: string
  name: string
  scope: KeyScope
  created_at: Date
  expires_at: Date | null
  last_used_at: Date | null
}

/** What authenticating with a key needs to know of it. */
export interface ApiKeyCredential {
  id: string
  accountId: string
  scope: KeyScope
  secretSha256: Uint8Array
  expiresAt: Date | null
  revoked: boolean
}

const LISTED = ['id', 'account_id', 'name', 'scope', 'created_at', 'expires_at', 'last_used_at'] as const

export interface NewApiKeyRow {
  id: string
  accountId: string
  name: string
  scope: KeyScope
  secretSha256: Buffer
  expiresAt: Date | null
}

/**
 * Stores a key unless its account already holds `maxActive` keys in force (neither revoked nor
 * expired); undefined then. One statement, so concurrent creations rarely pass the limit
 * together (it is a guard against runaway scripts, not a security boundary).
 */
export async function insertApiKey (db: Db, key: NewApiKeyRow, maxActive: number): Promise<ApiKeyRow | undefined> {
  const { rows } = await sql<ApiKeyRow>`
    INSERT INTO api_keys (id, account_id, name, scope, secret_sha256, expires_at)
    SELECT ${key.id}, ${key.accountId}::uuid, ${key.name}, ${key.scope}, ${key.secretSha256}, ${key.expiresAt}::timestamptz
    WHERE (SELECT count(*) FROM api_keys
           WHERE account_id = ${key.accountId}::uuid AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())) < ${maxActive}
    RETURNING id, account_id, name, scope, created_at, expires_at, last_used_at`.execute(db)
  return rows[0]
}

/** The keys not revoked (expired ones included, so their owner sees them), oldest first; one account's, or every account's. */
export async function listApiKeys (db: Db, accountId: string | undefined): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').select([...LISTED]).where('revoked_at', 'is', null)
  if (accountId !== undefined) query = query.where('account_id', '=', sql<string>`${accountId}::uuid`)
  return query.orderBy('created_at').orderBy('id').execute()
}

export async function findApiKeyCredential (db: Db, id: string): Promise<ApiKeyCredential | undefined> {
  const row = await db.selectFrom('api_keys')
    .select(['id', 'account_id', 'scope', 'secret_sha256', 'expires_at', 'revoked_at'])
    .where('id', '=', id)
    .executeTakeFirst()
  return row && {
    id: row.id,
    accountId: row.account_id,
    scope: row.scope,
    secretSha256: row.secret_sha256,
    expiresAt: row.expires_at,
    revoked: row.revoked_at !== null
  }
}

/**
 * Revokes a key not yet revoked, by `by`; `ownerId` restricts it to that account's keys (undefined:
 * any account's, for admins). Returns the key as it was, or undefined when there is no such key.
 */
export async function revokeApiKey (db: Db, id: string, by: string, ownerId: string | undefined): Promise<ApiKeyRow | undefined> {
  let query = db.updateTable('api_keys')
    .set({ revoked_at: sql<Date>`now()`, revoked_by: sql<string>`${by}::uuid` })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
  if (ownerId !== undefined) query = query.where('account_id', '=', sql<string>`${ownerId}::uuid`)
  return query.returning([...LISTED]).executeTakeFirst()
}

/** Records a use, unless one within the last `withinSeconds` is recorded already (by any instance). */
export async function touchApiKey (db: Db, id: string, withinSeconds: number): Promise<void> {
  await db.updateTable('api_keys')
    .set({ last_used_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where((eb) => eb.or([
      eb('last_used_at', 'is', null),
      eb('last_used_at', '<', sql<Date>`now() - make_interval(secs => ${withinSeconds})`)
    ]))
    .execute()
}
