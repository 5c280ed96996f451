// A bulk export reads its sources in id ranges, two at a time (features.pager.ts rangeChunks).
// Here ranges of 7 over 60 sources: every source once and in id order, with a filter too, the
// progress bar's total; two reads at once on a server; a range that gains sources after the
// ranges were cut (inserted between the cut and the reads, with ids inside the first and the
// last range) is read whole, over several queries; ranges of 1 over 1,100 sources, cut in
// statements growing from FIRST_CUT ranges to RANGES_PER_CUT; a failed read fails the export and
// leaves no file.
import t, { type Test } from 'tap'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { exportSources } from '../../src/features/bulk.js'
import { FIRST_CUT } from '../../src/features/features.pager.js'
import { crsCatalogue } from '../../src/sources/crs.js'
import { RANGES_PER_CUT } from '../../src/sources/sources.listing.js'
import { sourceStore } from '../../src/sources/sources.store.js'
import { addAccount, backend, createDatabase, targetConfig, tempDir } from '../helper.js'

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
t.teardown(() => db.destroy())
const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
const dir = await tempDir(t, 'sr-ranges-')
const catalogue = crsCatalogue([28992])
type Store = ReturnType<typeof sourceStore>

const insert = async (ids: string[], org = 'org-a'): Promise<void> => {
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT id, 'f-' || id, ${org}, ${editor.id}::uuid, ST_MakeEnvelope(n * 0.01, 0, n * 0.01 + 0.005, 0.005, 4326), '[2024-01-01Z,2025-01-01Z)'
    FROM unnest(${ids}::text[]) WITH ORDINALITY AS i(id, n)`.execute(db)
}
const idOf = (n: number, prefix = 'src_range'): string => `${prefix}${String(n).padStart(8, '0')}`
const stored = Array.from({ length: 60 }, (_, i) => idOf(i * 10))
await insert(stored)
await insert([idOf(5, 'src_other')], 'org-b')

/** The ids of an export's GeoJSONSeq, in the file's order, and the progress bar's total. */
async function exported (t: Test, store: Store, name: string, { filter, org = 'org-a', rowsPerQuery = 7 }: { filter?: string, org?: string, rowsPerQuery?: number } = {}): Promise<{ ids: string[], total: number | undefined }> {
  const to = join(dir, name)
  const totals: Array<number | undefined> = []
  const count = await exportSources(store, { organisation: org }, { format: 'geojsonseq', to, filter, catalogue, rowsPerQuery }, (total) => { totals.push(total); return { done: () => {} } })
  t.equal(totals.length, 1, `${name}: one progress bar`)
  const ids = (await readFile(to, 'utf8')).split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l.startsWith('\u001e') ? l.slice(1) : l) as { id: string }).id)
  t.equal(count, ids.length, `${name}: the count returned is the file's`)
  return { ids, total: totals[0] }
}

const byId = [{ field: 'id', descending: false }]

t.test('ranges of 7: every source once, in id order', async (t) => {
  const store = sourceStore(db)
  t.same(await store.rangeBounds({ scope: { organisation: 'org-a' }, filter: {}, page: { sort: byId, limit: 7 }, cap: 1e9 }),
    { bounds: stored.filter((_, i) => (i + 1) % 7 === 0), more: false }, 'every 7th id ends a range')
  t.same(await store.rangeBounds({ scope: { organisation: 'org-a' }, filter: {}, page: { sort: byId, after: { values: [], id: idOf(545) }, limit: 2 }, cap: 1e9 }),
    { bounds: [idOf(560), idOf(580)], more: false }, 'after an id: the ranges from there')
  t.same(await store.rangeBounds({ scope: { organisation: 'org-z' }, filter: {}, page: { sort: byId, limit: 7 }, cap: 1e9 }), { bounds: [], more: false }, 'none match: no bounds')
  t.same(await exported(t, store, 'all.geojsons'), { ids: stored, total: 60 }, 'the progress bar\'s total is the count')
  const expected = (await sql<{ id: string }>`SELECT id FROM sources WHERE organisation = 'org-a' AND feature_id LIKE '%1__' ORDER BY id`.execute(db)).rows.map((r) => r.id)
  t.ok(expected.length > 7 && expected.length < stored.length, 'the filter keeps more than one range of sources')
  t.same(await exported(t, store, 'filtered.geojsons', { filter: "feature_id LIKE '%1__'" }), { ids: expected, total: expected.length }, 'with a filter: its matches, once each, in order')
})

t.test('two ranges are read at once on a server', async (t) => {
  const base = sourceStore(db)
  let now = 0
  let most = 0
  const store: Store = {
    ...base,
    listRange: async (input) => {
      most = Math.max(most, ++now)
      try { return await base.listRange(input) } finally { now-- }
    }
  }
  t.same((await exported(t, store, 'parallel.geojsons')).ids, stored)
  // The embedded database runs one statement at a time: there the second read waits in its queue, still asked for at once.
  t.equal(most, 2, 'two reads in flight')
})

t.test('a range that gains sources after it was cut is read whole', async (t) => {
  const base = sourceStore(db)
  const added = [...Array.from({ length: 9 }, (_, i) => idOf(i + 1)), ...Array.from({ length: 9 }, (_, i) => idOf(900 + i))]
  let inserted = false
  const store: Store = {
    ...base,
    rangeBounds: async (input) => {
      const cut = await base.rangeBounds(input)
      if (!inserted) await insert(added)
      inserted = true
      return cut
    }
  }
  t.same(await exported(t, store, 'grown.geojsons'), { ids: [...stored, ...added].sort(), total: 60 }, 'the first and the last range, 9 more each: none lost, none twice (the total: those when it began)')
  await sql`DELETE FROM sources WHERE id = ANY (${added}::text[])`.execute(db)
})

t.test('ranges of 1 over 1,100 sources: cut in statements of 4, 32, 256, then RANGES_PER_CUT ranges', async (t) => {
  const many = Array.from({ length: 1100 }, (_, i) => idOf(i, 'src_manyy'))
  await insert(many, 'org-c')
  const base = sourceStore(db)
  let cuts = 0
  const store: Store = { ...base, rangeBounds: async (input) => { cuts++; return await base.rangeBounds(input) } }
  t.same(await exported(t, store, 'many.geojsons', { org: 'org-c', rowsPerQuery: 1 }), { ids: many, total: 1100 })
  // The first cut small (the first rows read at once), each next eight times larger, up to RANGES_PER_CUT.
  let expected = 0
  for (let cut = 0, per = FIRST_CUT; cut < 1100; per = Math.min(per * 8, RANGES_PER_CUT)) { cut += per; expected++ }
  t.equal(cuts, expected, `${expected} cuts, at most ${RANGES_PER_CUT} ranges each`)
})

t.test('a read that fails fails the export, and leaves no file', async (t) => {
  const base = sourceStore(db)
  let reads = 0
  const store: Store = {
    ...base,
    listRange: async (input) => {
      if (++reads === 3) throw new Error('the third read failed')
      return await base.listRange(input)
    }
  }
  const to = join(dir, 'failed.geojsons')
  await t.rejects(exportSources(store, { organisation: 'org-a' }, { format: 'geojsonseq', to, catalogue, rowsPerQuery: 7 }, () => ({ done: () => {} })), /the third read failed/)
  t.notOk(existsSync(to) || existsSync(`${to}.partial`), 'neither the file nor its .partial')
  t.comment(`backend ${backend}`)
})

t.test('--crs: the ranges\' Features in that CRS', async (t) => {
  const to = join(dir, 'rd.geojsons')
  await exportSources(sourceStore(db), { organisation: 'org-a' }, { format: 'geojsonseq', to, crs: 'http://www.opengis.net/def/crs/EPSG/0/28992', catalogue, rowsPerQuery: 7 }, () => ({ done: () => {} }))
  const features = (await readFile(to, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l.startsWith('\u001e') ? l.slice(1) : l) as { id: string, geometry: { coordinates: number[][][] } })
  t.equal(features.length, stored.length)
  const expected = (await sql<{ id: string, x: number, y: number }>`SELECT id, ST_XMin(ST_Transform(geom, 28992)) AS x, ST_YMin(ST_Transform(geom, 28992)) AS y FROM sources WHERE organisation = 'org-a' ORDER BY id`.execute(db)).rows
  for (const [i, f] of features.entries()) {
    const xs = f.geometry.coordinates[0]!.map((p) => p[0]!)
    const ys = f.geometry.coordinates[0]!.map((p) => p[1]!)
    const e = expected[i]!
    if (f.id !== e.id || Math.abs(Math.min(...xs) - e.x) > 1e-6 || Math.abs(Math.min(...ys) - e.y) > 1e-6) t.fail(`${f.id}: not PostGIS's transform to 28992, easting first (${Math.min(...xs)}, ${Math.min(...ys)} against ${e.x}, ${e.y})`)
  }
  t.ok(features.every((f) => Math.abs(f.geometry.coordinates[0]![0]![0]!) > 1000), 'metres, not degrees')
})
