// What bench/tiles.mjs and bench/tile-cache.mjs share: tiles inside the seeded area (0.005° boxes
// on a 0.01° grid, 3,000 a row from (-15, -15)), the service's path of a tile, and pgbench running
// the service's own MVT statements for a tile (taken from its build: tileQuery in
// src/tiles/tiles.repository.ts, the same SQL with the same parameters, one pgbench script per
// tile with its parameters as \set variables; a tile the service draws again because it is over
// TILES_MAX_BYTES has all its statements in the script).
import { execFileSync, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { tempDir } from './setup.mjs'

export const MAX_FEATURES = 10_000 // TILES_MAX_FEATURES's default
export const MAX_BYTES = 512_000 // TILES_MAX_BYTES's default
const TILES_PER_ZOOM = 64

const lonToX = (lon, n) => ((lon + 180) / 360) * n
const latToY = (lat, n) => { const r = (lat * Math.PI) / 180; return ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n }

/**
 * Tiles inside the seeded area of `rows` sources (x -15..15, y -15..-15 + rows / 3000 × 0.01):
 * those wholly inside, or, where none is (a low zoom, or a small seed), those that overlap it; at
 * most 64, an even sample, so that every run takes the same tiles.
 */
export function tilesAt (z, rows) {
  const yTop = -15 + Math.ceil(rows / 3000) * 0.01
  const n = 2 ** z
  const [x0, x1, y0, y1] = [lonToX(-15, n), lonToX(15, n), latToY(yTop, n), latToY(-15, n)]
  let tiles = []
  for (let x = Math.ceil(x0); x + 1 <= x1; x++) for (let y = Math.ceil(y0); y + 1 <= y1; y++) tiles.push({ z, x, y })
  if (tiles.length === 0) for (let x = Math.floor(x0); x < x1; x++) for (let y = Math.floor(y0); y < y1; y++) tiles.push({ z, x, y })
  if (tiles.length > TILES_PER_ZOOM) tiles = Array.from({ length: TILES_PER_ZOOM }, (_, i) => tiles[Math.floor((i * tiles.length) / TILES_PER_ZOOM)])
  return tiles
}

export const servicePath = ({ z, x, y }) => `/collections/sources/tiles/WebMercatorQuad/${z}/${y}/${x}`

/** pgbench on the service's tile statements, on the bench database at `url`, for the organisation `organisation`. */
export async function tilePgbench (url, { organisation = 'bench', log }) {
  // The statements the service runs for a tile, as its build makes them: a Kysely on the bench
  // database whose log hands back each executed query's SQL and parameters.
  const { tileQuery } = await import('../dist/tiles/tiles.repository.js')
  let lastQuery
  const kdb = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }), log: (e) => { lastQuery = e.query } })
  const scope = { organisation }
  /** The MVT statements the service's store runs for `tile` (tiles.store.ts: again with half the features it held while over MAX_BYTES), and the features the last one drew. */
  async function statementsOf (tile) {
    const mvt = []
    let features = 0
    for (let maxFeatures = MAX_FEATURES; ;) {
      const r = await tileQuery(kdb, { tile, scope, filter: {}, maxFeatures })
      mvt.push(lastQuery)
      const bytes = r.rows[0]?.mvt?.length ?? 0
      features = r.rows[0]?.features ?? 0
      if (bytes <= MAX_BYTES || maxFeatures <= 100) break
      maxFeatures = Math.max(100, Math.floor(Math.min(maxFeatures, features) / 2))
    }
    return { mvt, features }
  }

  // One script per tile (picked at random, as the HTTP loads pick paths), each statement's
  // parameters as pgbench variables: numbers by \set in the script, strings (the organisation) by
  // -D. pgbench reads ":name" as a variable, so each single colon (in string literals only:
  // to_char's format; casts are "::") becomes chr(58), which PostgreSQL folds back into the constant.
  const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
  const pgDir = tempDir('bench-tiles-pgbench-')
  const strings = new Map()
  function pgStatement (q, prefix, sets) {
    return q.sql.replace(/(?<!:):(?!:)/g, "' || chr(58) || '").replace(/\$(\d+)/g, (_, n) => {
      const v = q.parameters[Number(n) - 1]
      if (typeof v === 'number') {
        if (!Number.isFinite(v)) throw new Error(`parameter ${n}: ${v}`)
        sets.push(`\\set ${prefix}${n} ${Number.isInteger(v) ? v : v.toPrecision(17)}`)
        return `:${prefix}${n}`
      }
      if (typeof v !== 'string') throw new Error(`parameter ${n} is ${typeof v}`)
      if (![...strings.values()].includes(v)) strings.set(`s${strings.size}`, v)
      return `:${[...strings.entries()].find(([, s]) => s === v)[0]}`
    }).replace(/\s*\n\s*/g, ' ') + ';'
  }
  /** One script file per tile of `perTile` (statementsOf's answers). */
  function files (name, perTile) {
    return perTile.map((st, i) => {
      const sets = []
      const lines = st.mvt.map((q, k) => pgStatement(q, `m${k}_`, sets))
      const file = join(pgDir, `${name}-${i}.sql`)
      writeFileSync(file, `${sets.join('\n')}\n${lines.join('\n')}\n`)
      return file
    })
  }
  /**
   * Transactions (tiles) a second of pgbench over `scripts` at `clients` clients for `duration` s;
   * with `cpu` (bench/cpu.mjs: the cluster's CPU ms so far), also `cpuMs`: pgbench's own CPU and
   * the cluster's over the run, a transaction.
   */
  function run (scripts, clients, duration, cpu) {
    const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-T', String(duration), ...[...strings].flatMap(([k, v]) => ['-D', `${k}=${v}`]), ...scripts.flatMap((f) => ['-f', f]), url]
    const before = cpu?.()
    const r = spawnSync('sh', ['-c', `"${pgbenchBin}" "$@" && times`, 'sh', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    // pgbench's backends end with it: read the cluster once the postmaster has reaped them
    // (their CPU is then its children's).
    if (cpu !== undefined) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000)
    const clusterMs = cpu === undefined ? 0 : cpu() - before
    if (r.status !== 0) throw new Error(`pgbench: ${r.stderr}`)
    const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
    const transactions = Number(/number of transactions actually processed: (\d+)/.exec(r.stdout)?.[1])
    const failed = Number(/number of failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0)
    if (failed > 0) log(`pgbench: ${failed} failed transactions`)
    // `times`: the shell's user and system time, then its children's (pgbench's).
    const [user, system] = r.stdout.trim().split('\n').at(-1).match(/(\d+)m([\d.]+)s/g).map((t) => { const [, m, sec] = /(\d+)m([\d.]+)s/.exec(t); return Number(m) * 60 + Number(sec) })
    const cpuMs = (clusterMs + (user + system) * 1000) / Math.max(1, transactions)
    log(`pgbench (${clients} clients, ${scripts.length} scripts): ${tps.toFixed(1)} tps${cpu === undefined ? '' : `, ${cpuMs.toFixed(3)} CPU ms a tile`}`)
    return cpu === undefined ? tps : { tps, cpuMs }
  }
  return { statementsOf, files, run, close: () => kdb.destroy() }
}
