// The Kysely Database interface: one entry per table, mirroring sql/.
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely'

export const ROLES = ['admin', 'editor', 'viewer'] as const
export type Role = typeof ROLES[number]

export interface AccountsTable {
  id: Generated<string>
  email: string
  password_hash: string
  role: Role
  organisation: string
  disabled: Generated<boolean>
  password_changed_at: Generated<Date>
  created_at: Generated<Date>
}

export interface SourcesTable {
  id: string
  feature_id: string
  organisation: string
  created_by: string
  /** geometry(Polygon,4326); written as hex EWKB, read through postgis.ts helpers. */
  geom: ColumnType<never, string, string>
  /** tstzrange; read through lower()/upper(). */
  period: ColumnType<never, string, string>
  created_at: Generated<Date>
}

export interface MigrationsTable {
  name: string
  checksum: string
  applied_at: Generated<Date>
}

export interface Database {
  accounts: AccountsTable
  sources: SourcesTable
  schema_migrations: MigrationsTable
}

export type Account = Selectable<AccountsTable>
export type NewAccount = Insertable<AccountsTable>
