// SQL for accounts. Functions take the Kysely handle (or a transaction) first; callers own it.
import { sql } from 'kysely'
import type { Account, Db, Role } from '../db/database.js'

export interface AccountStatus {
  disabled: boolean
  role: Role
  organisation: string
  passwordChangedAt: Date
}

export async function findAccountByEmail (db: Db, email: string): Promise<Account | undefined> {
  // Columns listed, not *: the service runs this as a prepared statement, and a cached `SELECT *`
  // fails ("cached plan must not change result type") once a migration adds a column.
  return db.selectFrom('accounts')
    .select(['id', 'email', 'password_hash', 'role', 'organisation', 'disabled', 'password_changed_at', 'created_at'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst()
}

export async function findAccountStatus (db: Db, id: string): Promise<AccountStatus | undefined> {
  const row = await db.selectFrom('accounts')
    .select(['disabled', 'role', 'organisation', 'password_changed_at'])
    .where('id', '=', sql<string>`${id}::uuid`)
    .executeTakeFirst()
  return row && { disabled: row.disabled, role: row.role, organisation: row.organisation, passwordChangedAt: row.password_changed_at }
}

export async function insertAccount (db: Db, account: { email: string, passwordHash: string, role: Role, organisation: string }): Promise<Account> {
  return db.insertInto('accounts')
    .values({ email: account.email, password_hash: account.passwordHash, role: account.role, organisation: account.organisation })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function listAccounts (db: Db): Promise<Array<Omit<Account, 'password_hash'>>> {
  return db.selectFrom('accounts')
    .select(['id', 'email', 'role', 'organisation', 'disabled', 'password_changed_at', 'created_at'])
    .orderBy('organisation').orderBy('email')
    .execute()
}

/** Returns false when no account has that e-mail. */
export async function setAccountDisabled (db: Db, email: string, disabled: boolean): Promise<boolean> {
  const r = await db.updateTable('accounts').set({ disabled })
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst()
  return r.numUpdatedRows > 0n
}

/** Returns false when no account has that e-mail. Tokens issued before now stop working. */
export async function setAccountPassword (db: Db, email: string, passwordHash: string): Promise<boolean> {
  const r = await db.updateTable('accounts').set({ password_hash: passwordHash, password_changed_at: sql<Date>`now()` })
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst()
  return r.numUpdatedRows > 0n
}

export async function hasAnyAccount (db: Db): Promise<boolean> {
  return (await db.selectFrom('accounts').select('id').limit(1).executeTakeFirst()) !== undefined
}
