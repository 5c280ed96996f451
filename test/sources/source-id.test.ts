// Source ids: format, uniqueness, and every base62 character in use (no modulo bias to speak of).
import t from 'tap'
import { newSourceIds } from '../../src/sources/source-id.js'

t.test('n ids of the form src_ + 22 base62, all distinct', async (t) => {
  for (const n of [1, 2, 1000]) {
    const ids = newSourceIds(n)
    t.equal(ids.length, n)
    t.ok(ids.every((id) => /^src_[0-9A-Za-z]{22}$/.test(id)), `format, n=${n}`)
    t.equal(new Set(ids).size, n, `distinct, n=${n}`)
  }
  const counts = new Map<string, number>()
  for (const id of newSourceIds(20_000)) for (const c of id.slice(4)) counts.set(c, (counts.get(c) ?? 0) + 1)
  t.equal(counts.size, 62, 'every character appears')
  const expected = (20_000 * 22) / 62
  t.ok([...counts.values()].every((c) => Math.abs(c - expected) < expected * 0.1), 'each within 10 % of uniform')
})
