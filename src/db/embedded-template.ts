// The migrated template of the embedded database: a data directory made at install (`npm run
// embedded`, which `prepare` runs) by applying sql/ to a new database, with a manifest of what it
// holds. A first start copies it instead of creating a database and installing PostGIS in
// WebAssembly, then migrates as any start does, so a template made from an older sql/ is brought
// forward. It holds the schema only: the JWT secret and the first admin are made by each first
// start (bootstrap.ts), never in the template. A template that migrate could not bring forward
// (made by another PGlite or PostGIS, or holding a numbered file that sql/ does not have as it
// is) is not used: the database is then created as without one.
import { existsSync, readFileSync } from 'node:fs'
import { cp, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EMBEDDED_DIR, installed } from './embedded-postgis.js'
import type { Migration } from './migrate.js'

export const TEMPLATE_DIR = join(EMBEDDED_DIR, 'template')
const MANIFEST = 'manifest.json'
const PGDATA = 'pgdata'

export interface TemplateManifest {
  pglite: string
  postgis: string
  /** schema_migrations of the template, as it was recorded. */
  migrations: Array<{ name: string, checksum: string }>
}

export type TemplateCheck =
  | { usable: true, dir: string, /** files of sql/ the template lacks or holds in another text */ pending: string[] }
  | { usable: false, dir: string, reason: string }

function versions (): Pick<TemplateManifest, 'pglite' | 'postgis'> {
  return { pglite: installed('@electric-sql/pglite').version, postgis: installed('@electric-sql/pglite-postgis').version }
}

/** Whether the template in `dir` can start a database that `migrations` (sql/) then migrates. */
export function checkTemplate (dir: string, migrations: Migration[]): TemplateCheck {
  let manifest: TemplateManifest
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as TemplateManifest
  } catch {
    return { usable: false, dir, reason: 'there is no template (npm run embedded makes one)' }
  }
  if (!existsSync(join(dir, PGDATA))) return { usable: false, dir, reason: 'the template has no data directory' }
  const now = versions()
  if (manifest.pglite !== now.pglite || manifest.postgis !== now.postgis) {
    return { usable: false, dir, reason: `the template was made by PGlite ${manifest.pglite} with PostGIS package ${manifest.postgis}; installed are ${now.pglite} and ${now.postgis}` }
  }
  const byName = new Map(migrations.map((m) => [m.name, m]))
  for (const { name, checksum } of manifest.migrations) {
    const m = byName.get(name)
    if (m === undefined) return { usable: false, dir, reason: `the template holds ${name}, which sql/ does not` }
    if (!m.repeatable && m.checksum !== checksum && !m.supersedes.includes(checksum)) return { usable: false, dir, reason: `the template holds another text of ${name} than sql/` }
  }
  const recorded = new Map(manifest.migrations.map((m) => [m.name, m.checksum]))
  const pending = migrations.filter((m) => {
    const checksum = recorded.get(m.name)
    return checksum === undefined || (m.repeatable && checksum !== m.checksum)
  }).map((m) => m.name)
  return { usable: true, dir, pending }
}

/** Copies the template's data directory to `pgdata`, which must not exist (whole or not at all). */
export async function copyTemplate (dir: string, pgdata: string): Promise<void> {
  const tmp = `${pgdata}.from-template`
  await rm(tmp, { recursive: true, force: true })
  await cp(join(dir, PGDATA), tmp, { recursive: true })
  await rename(tmp, pgdata)
}

/** Makes `dir` the template: a copy of `pgdata` (closed, migrated), with its manifest. */
export async function saveTemplate (dir: string, pgdata: string, migrations: TemplateManifest['migrations']): Promise<void> {
  const tmp = `${dir}.tmp-${process.pid}`
  await rm(tmp, { recursive: true, force: true })
  await cp(pgdata, join(tmp, PGDATA), { recursive: true })
  const manifest: TemplateManifest = { ...versions(), migrations }
  await writeFile(join(tmp, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`)
  await rm(dir, { recursive: true, force: true })
  await rename(tmp, dir)
}
