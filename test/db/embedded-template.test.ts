// The embedded backend's first start from the migrated template (src/db/embedded-template.ts,
// made by `npm run embedded` at install): a first start takes the template path, and its
// database equals one migrated plainly; a template made from an older sql/ is brought forward;
// a template migrate could not bring forward is not used; the JWT secret and the first admin are
// each first start's own. Not timed: the times are in docs/performance.md.
import t, { type Test } from 'tap'
import { cp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { bootstrap } from '../../src/bootstrap.js'
import { loadConfig } from '../../src/config.js'
import { buildEmbeddedTemplate } from '../../src/db/embedded.js'
import { checkTemplate, TEMPLATE_DIR, type TemplateManifest } from '../../src/db/embedded-template.js'
import { listMigrations, SQL_DIR } from '../../src/db/migrate.js'
import { backend, createDatabase, directDb, tempDir } from '../helper.js'
import { CATALOG, schemaOf } from './schema.js'

type Info = Record<string, unknown>

/** A first start (bootstrap, as `npm start` does) in a new DATA_DIR; its log lines and its ready line. */
async function firstStart (t: Test, template?: string) {
  const infos: Info[] = []
  const log = { info: (o: object, msg: string) => { infos.push({ ...o, msg }) }, warn: () => {} }
  const started = await bootstrap(loadConfig({ DATA_DIR: await tempDir(t, 'sr-first-start-') }), log, { template })
  t.teardown(() => started.db.destroy())
  return { ...started, infos, ready: infos.find((i) => i.backend === 'embedded') }
}

async function recorded (db: Awaited<ReturnType<typeof firstStart>>['db']) {
  return new Map((await db.selectFrom('schema_migrations').select(['name', 'checksum']).execute()).map((r) => [r.name, r.checksum]))
}

if (backend === 'server') {
  t.plan(0, 'embedded backend only (npm test runs it)')
} else {
  const today = await listMigrations()

  t.test('a first start copies the template made at install; its database equals one migrated plainly', async (t) => {
    // Current after `npm ci` (prepare); made here when the suite runs without it.
    await buildEmbeddedTemplate(TEMPLATE_DIR)
    const a = await firstStart(t)
    t.match(a.ready, { fromTemplate: true, migrationsApplied: [], lazyPostgis: true }, 'the template path: nothing left to apply, PostGIS not loaded by the open')
    t.ok(a.infos.some((i) => i.msg === 'embedded PostGIS: copied the migrated template'), 'says it copied the template')
    t.same(await recorded(a.db), new Map(today.map((m) => [m.name, m.checksum])), 'schema_migrations: every file of sql/, as it is')

    // The suite's database: `migrate` run on an empty one (scripts/test.mjs), no template.
    const plain = await directDb(t, await createDatabase(t))
    t.same(await recorded(a.db), await recorded(plain), 'the same schema_migrations as a plainly migrated database')
    const [fromTemplate, migrated] = [await schemaOf(a.db), await schemaOf(plain)]
    for (const kind of Object.keys(CATALOG)) t.same(fromTemplate[kind], migrated[kind], `${kind}: as on a plainly migrated database`)

    const area = await sql<{ m2: number }>`SELECT ST_Area(ST_MakeEnvelope(0, 0, 0.01, 0.01, 4326)::geography) AS m2`.execute(a.db)
    t.ok((area.rows[0]?.m2 ?? 0) > 1_000_000, 'PostGIS loads on first use')

    const b = await firstStart(t)
    t.match(b.ready, { fromTemplate: true })
    t.not(b.config.JWT_SECRET, a.config.JWT_SECRET, 'each first start generates its own JWT secret')
    t.ok(a.generatedAdmin !== undefined && b.generatedAdmin !== undefined, 'each first start creates its admin')
    t.not(b.generatedAdmin?.password, a.generatedAdmin?.password, 'with its own password')
    const accounts = await sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts`.execute(b.db)
    t.equal(accounts.rows[0]?.n, 1, 'the template holds no account: only the one this start made')
  })

  t.test('a template made from an older sql/ is brought forward by the first start', async (t) => {
    // sql/ before its last numbered file, and with an older text of a repeatable file.
    const older = await tempDir(t, 'sr-older-sql-')
    await cp(SQL_DIR, older, { recursive: true })
    const last = today.filter((m) => !m.repeatable).at(-1)?.name as string
    await rm(join(older, last))
    // The repeatable files that came with it (they use a table it creates) were not there either.
    const tables = [...(await readFile(join(SQL_DIR, last), 'utf8')).matchAll(/CREATE TABLE (\w+)/gi)].map((m) => m[1] as string)
    const companions: string[] = []
    for (const m of today.filter((m) => m.repeatable)) {
      const text = await readFile(join(SQL_DIR, m.name), 'utf8')
      if (tables.some((table) => new RegExp(`(FROM|INTO|ON|UPDATE|JOIN) ${table}\\b`).test(text))) { companions.push(m.name); await rm(join(older, m.name)) }
    }
    const changed = 'functions/tile_changes.sql'
    await writeFile(join(older, changed), `${await readFile(join(SQL_DIR, changed), 'utf8')}-- an older text\n`)
    const pending = today.map((m) => m.name).filter((name) => name === last || name === changed || companions.includes(name))
    const template = join(await tempDir(t, 'sr-older-template-'), 'template')
    t.match(await buildEmbeddedTemplate(template, older), { built: true })
    t.match(checkTemplate(template, today), { usable: true, pending }, 'usable, with the newer files to apply')

    const started = await firstStart(t, template)
    t.match(started.ready, { fromTemplate: true, migrationsApplied: pending }, 'the newer files applied on top of the template')
    t.same(await recorded(started.db), new Map(today.map((m) => [m.name, m.checksum])), 'schema_migrations: every file of sql/, as it is')
  })

  t.test('a template migrate could not bring forward is not used', async (t) => {
    const manifest = JSON.parse(await readFile(join(TEMPLATE_DIR, 'manifest.json'), 'utf8')) as TemplateManifest
    const at = async (name: string, m: TemplateManifest) => {
      const dir = join(await tempDir(t, 'sr-bad-template-'), name)
      await cp(TEMPLATE_DIR, dir, { recursive: true })
      await writeFile(join(dir, 'manifest.json'), JSON.stringify(m))
      return dir
    }
    const edited = manifest.migrations.map((m) => m.name === '002_accounts.sql' ? { ...m, checksum: '0'.repeat(64) } : m)
    t.match(checkTemplate(await at('edited', { ...manifest, migrations: edited }), today), { usable: false, reason: /another text of 002_accounts\.sql/ })
    const unknown = [...manifest.migrations, { name: '999_elsewhere.sql', checksum: '0'.repeat(64) }]
    t.match(checkTemplate(await at('unknown', { ...manifest, migrations: unknown }), today), { usable: false, reason: /999_elsewhere\.sql, which sql\/ does not/ })
    t.match(checkTemplate(await at('pglite', { ...manifest, pglite: '0.0.1' }), today), { usable: false, reason: /made by PGlite 0\.0\.1/ })
    t.match(checkTemplate(join(TEMPLATE_DIR, 'none'), today), { usable: false, reason: /there is no template/ })
  })
}
