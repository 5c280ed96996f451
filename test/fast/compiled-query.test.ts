// compileOnce: a query compiled once binds new values in place of its placeholders, keeps its
// constants, and refuses a placeholder that does not reach the parameters as it is.
import t from 'tap'
import { sql } from 'kysely'
import { compileOnce, placeholder, queryBuilder } from '../../src/fast/compiled-query.js'

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
