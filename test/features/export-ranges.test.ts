// A bulk export reads its sources in id ranges, two at a time (features.pager.ts rangeChunks).
// Here ranges of 7 over 60 sources: every source once and in id order, with a filter too; a
// range that gains sources after the ranges were cut (inserted between rangeBounds and the
// reads, with ids inside the first and the last range) is read whole, over several queries.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { exportSources } from '../../src/features/bulk.js'
import { crsCatalogue } from '../../src/sources/crs.js'
import { sourceStore } from '../../src/sources/sources.store.js'
import { addAccount, createDatabase, targetConfig, tempDir } from '../helper.js'

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
t.teardown(() => db.destroy())
const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
const dir = await tempDir(t, 'sr-ranges-')
const catalogue = crsCatalogue([28992])

const insert = async (ids: string[], org = 'org-a'): Promise<void> => {
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT id, 'f-' || id, ${org}, ${editor.id}::uuid, ST_MakeEnvelope(n * 0.01, 0, n * 0.01 + 0.005, 0.005, 4326), '[2024-01-01Z,2025-01-01Z)'
    FROM unnest(${ids}::text[]) WITH ORDINALITY AS i(id, n)`.execute(db)
}
const idOf = (n: number, prefix = 'src_range'): string => `${prefix}${String(n).padStart(8, '0')}`
const stored = Array.from({ length: 60 }, (_, i) => idOf(i * 10))
await insert(stored)
await insert([idOf(5, 'src_other')], 'org-b')

/** The ids of an export's GeoJSONSeq, in the file's order. */
async function exported (store: ReturnType<typeof sourceStore>, name: string, filter?: string): Promise<{ ids: string[], total: number | undefined }> {
  const to = join(dir, name)
  const totals: Array<number | undefined> = []
  const count = await exportSources(store, { organisation: 'org-a' }, { format: 'geojsonseq', to, filter, catalogue, rowsPerQuery: 7 }, (total) => { totals.push(total); return { done: () => {} } })
  t.equal(totals.length, 1, `${name}: one progress bar`)
  const ids = (await readFile(to, 'utf8')).split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l.startsWith('\u001e') ? l.slice(1) : l) as { id: string }).id)
  t.equal(count, ids.length, `${name}: the count returned is the file's`)
  return { ids, total: totals[0] }
}

t.test('ranges of 7: every source once, in id order', async (t) => {
  const store = sourceStore(db)
  const bounds = await store.rangeBounds({ scope: { organisation: 'org-a' }, filter: {}, page: { sort: [{ field: 'id', descending: false }], limit: 7 }, cap: 1e9 })
  t.same(bounds, { bounds: stored.filter((_, i) => (i + 1) % 7 === 0), matched: 60 }, 'every 7th id ends a range; 60 match')
  const none = await store.rangeBounds({ scope: { organisation: 'org-z' }, filter: {}, page: { sort: [{ field: 'id', descending: false }], limit: 7 }, cap: 1e9 })
  t.same(none, { bounds: [], matched: 0 }, 'none match: no bounds')
  t.same(await exported(store, 'all.geojsons'), { ids: stored, total: 60 }, 'the progress bar\'s total is the count')
  const expected = (await sql<{ id: string }>`SELECT id FROM sources WHERE organisation = 'org-a' AND feature_id LIKE '%1__' ORDER BY id`.execute(db)).rows.map((r) => r.id)
  t.ok(expected.length > 7 && expected.length < stored.length, 'the filter keeps more than one range of sources')
  t.same(await exported(store, 'filtered.geojsons', "feature_id LIKE '%1__'"), { ids: expected, total: expected.length }, 'with a filter: its matches, once each, in order')
})

t.test('a range that gains sources after it was cut is read whole', async (t) => {
  const base = sourceStore(db)
  const added = [...Array.from({ length: 9 }, (_, i) => idOf(i + 1)), ...Array.from({ length: 9 }, (_, i) => idOf(900 + i))]
  const store: typeof base = {
    ...base,
    rangeBounds: async (input) => {
      const bounds = await base.rangeBounds(input)
      await insert(added)
      return bounds
    }
  }
  t.same(await exported(store, 'grown.geojsons'), { ids: [...stored, ...added].sort(), total: 60 }, 'the first and the last range, 9 more each: none lost, none twice (the total: those when it began)')
})
