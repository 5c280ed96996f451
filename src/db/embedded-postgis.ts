// PostGIS for the embedded backend, loaded when first used, as a PostgreSQL server loads
// postgis-3.so in a backend at its first PostGIS call. The stock extension of
// @electric-sql/pglite-postgis unpacks its whole bundle (PostGIS, raster, topology, the tiger
// geocoder, PROJ's data) into memory and compiles its three libraries at every open, whether a
// query uses them or not (the sizes and what it cost: docs/performance.md). Here the bundle is unpacked
// once, at install (`npm run embedded`, run by `prepare`), into dist/embedded/postgis; each open
// mounts that directory read-only (Emscripten's NODEFS) and links its files where PostgreSQL looks
// for them, so nothing is read or compiled until a query needs it. Without the unpacked copy (a
// build that skipped it, or one made for another version of the package) the stock extension is used.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdir, rm, rename } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Extension } from '@electric-sql/pglite'
import { postgis } from '@electric-sql/pglite-postgis'

/** Where install-time artefacts of the embedded backend live: the unpacked PostGIS and the template. */
export const EMBEDDED_DIR = fileURLToPath(new URL('../../dist/embedded/', import.meta.url))
const POSTGIS_DIR = join(EMBEDDED_DIR, 'postgis')
const STAMP = 'package.json'
// PGlite's installation prefix inside its virtual file system, and where the copy is mounted.
const PREFIX = '/pglite'
const MOUNT = '/pglite-postgis'

const require = createRequire(import.meta.url)

/** The installed version of a package of @electric-sql, and its dist/ directory. */
export function installed (name: '@electric-sql/pglite' | '@electric-sql/pglite-postgis'): { version: string, dist: string } {
  const dist = dirname(require.resolve(name))
  const { version } = JSON.parse(readFileSync(join(dist, '..', 'package.json'), 'utf8')) as { version: string }
  return { version, dist }
}

function unpackedVersion (): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(POSTGIS_DIR, STAMP), 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}

/** Unpacks the installed bundle into dist/embedded/postgis unless that copy is of the installed version. */
export async function unpackPostgis (): Promise<{ unpacked: boolean, version: string }> {
  const { version, dist } = installed('@electric-sql/pglite-postgis')
  if (unpackedVersion() === version) return { unpacked: false, version }
  const { x } = await import('tar')
  const tmp = `${POSTGIS_DIR}.tmp-${process.pid}`
  await rm(tmp, { recursive: true, force: true })
  await mkdir(tmp, { recursive: true })
  await x({ file: join(dist, 'postgis.tar.gz'), cwd: tmp })
  writeFileSync(join(tmp, STAMP), `${JSON.stringify({ name: '@electric-sql/pglite-postgis', version })}\n`)
  await rm(POSTGIS_DIR, { recursive: true, force: true })
  await rename(tmp, POSTGIS_DIR)
  return { unpacked: true, version }
}

interface EmscriptenFS {
  mkdirTree: (path: string) => void
  mount: (type: unknown, opts: { root: string }, path: string) => void
  symlink: (target: string, path: string) => void
  filesystems: { NODEFS: unknown }
}
interface EmscriptenOpts { preRun?: Array<(mod: { FS: EmscriptenFS }) => void>, [k: string]: unknown }

/** Every file below `dir`, as paths relative to it. */
function filesBelow (dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`
    return e.isDirectory() ? filesBelow(dir, rel) : [rel]
  })
}

/** PostGIS from the unpacked copy, loaded on first use. */
const lazyPostgis: Extension = {
  name: 'postgis',
  async setup (pg, opts: EmscriptenOpts) {
    // The stock setup sets PostGIS's environment (PROJ_DATA and GDAL's switches); its bundle is left out.
    const { emscriptenOpts } = await postgis.setup(pg, opts) as { emscriptenOpts: EmscriptenOpts }
    const files = filesBelow(POSTGIS_DIR).filter((f) => f !== STAMP)
    const link = (mod: { FS: EmscriptenFS }) => {
      const { FS } = mod
      FS.mkdirTree(MOUNT)
      FS.mount(FS.filesystems.NODEFS, { root: POSTGIS_DIR }, MOUNT)
      for (const f of files) {
        FS.mkdirTree(dirname(`${PREFIX}/${f}`))
        FS.symlink(`${MOUNT}/${f}`, `${PREFIX}/${f}`)
      }
    }
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...emscriptenOpts.preRun ?? [], link] } }
  }
}

/** The PostGIS extension to open PGlite with, and whether it is the lazily loaded copy. */
export function postgisExtension (): { extension: Extension, lazy: boolean } {
  const lazy = existsSync(POSTGIS_DIR) && unpackedVersion() === installed('@electric-sql/pglite-postgis').version
  return { extension: lazy ? lazyPostgis : postgis, lazy }
}
