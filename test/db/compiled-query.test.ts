// compileOnce: a query compiled once binds new values in place of its placeholders, keeps its
// constants, and refuses a placeholder that does not reach the parameters as it is.
import t from 'tap'
import { sql } from 'kysely'
import { compileOnce, placeholder, queryBuilder } from '../../src/db/compiled-query.js'

t.test('binds values by placeholder, keeps constants', async (t) => {
  const q = compileOnce({ id: placeholder('id'), ids: [] as string[] }, (p) => queryBuilder.selectFrom('sources').select('id')
    .where('id', '=', p.id).where('organisation', '=', 'constant').where('id', '=', sql<string>`any(${p.ids}::text[])`))
  const a = q({ id: 'src_a', ids: ['x', 'y'] })
  t.same(a.parameters, ['src_a', 'constant', ['x', 'y']])
  t.match(a.sql, /"id" = \$1 and "organisation" = \$2 and "id" = any\(\$3::text\[\]\)/)
  t.same(q({ id: 'src_b', ids: [] }).parameters, ['src_b', 'constant', []], 'each call binds afresh')
})

t.test('a placeholder hidden inside an expression is refused when compiling', async (t) => {
  t.throws(() => compileOnce({ id: placeholder('id') }, (p) => queryBuilder.selectFrom('sources').select('id').where('id', '=', `${p.id}-suffix`)),
    /placeholder "id" is not a parameter/)
})

t.test('compileByShape: one compiled query per shape, the same SQL and parameters as building it each time', async (t) => {
  const { compileByShape, shapeOf } = await import('../../src/db/compiled-query.js')
  const { LIST_INPUT_SHAPE_KEYS, countedPageQuery, listPageQuery, sortOrder } = await import('../../src/sources/sources.listing.js')
  const { searchBoxes } = await import('../../src/sources/search-box.js')
  const inputs = [
    { scope: { organisation: 'org-a' }, filter: { boxes: searchBoxes(1, 2, 3, 4) }, page: { sort: sortOrder([{ field: 'id', descending: false }]), limit: 100 }, cap: 1000 },
    { scope: { organisation: 'org-b' }, filter: { boxes: searchBoxes(5, 6, 7, 8) }, page: { sort: sortOrder([{ field: 'id', descending: false }]), limit: 7 }, cap: 1000 },
    { scope: 'all' as const, filter: { boxes: searchBoxes(170, 0, -170, 1), conflict: true }, page: { sort: sortOrder([{ field: 'start_at', descending: true }]), limit: 7 }, cap: 10 },
    { scope: 'all' as const, filter: { boxes: searchBoxes(0, 0, 0.0001, 1) }, page: { sort: sortOrder([{ field: 'id', descending: false }]), limit: 7 }, cap: 10 },
    { scope: { organisation: 'org-a' }, filter: { datetime: { from: '2024-01-01T00:00:00Z' }, featureId: 'f-1' }, page: { sort: sortOrder([{ field: 'created_at', descending: false }]), after: { values: ['2024-01-01T00:00:00Z'], id: 'src_1' }, limit: 7 }, cap: 10 }
  ]
  t.equal(shapeOf(inputs[0], LIST_INPUT_SHAPE_KEYS).shape, shapeOf(inputs[1], LIST_INPUT_SHAPE_KEYS).shape, 'other values, the same shape')
  t.not(shapeOf(inputs[0], LIST_INPUT_SHAPE_KEYS).shape, shapeOf(inputs[3], LIST_INPUT_SHAPE_KEYS).shape, 'a box too thin for the shortcut is another shape')
  for (const build of [listPageQuery, countedPageQuery]) {
    const compiled = compileByShape((i: typeof inputs[number]) => build(queryBuilder, i), LIST_INPUT_SHAPE_KEYS)
    for (const input of inputs) {
      const direct = build(queryBuilder, input).compile()
      const bound = compiled(input)
      t.equal(bound.sql, direct.sql, `${build.name}: the SQL of its shape`)
      t.same(bound.parameters, direct.parameters, `${build.name}: its own values`)
    }
  }
})
