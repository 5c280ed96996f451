// The shape-key contract of the listing queries: a listing is compiled once per shape of its
// ListInput (db/compiled-query.ts compileByShape), where every string and number is a parameter
// except the values of LIST_INPUT_SHAPE_KEYS. Here every other string and number of an input
// that uses every field is changed in turn, and the SQL text must not move: a field whose value
// changes the SQL and is not a shape key fails this test (a wrong compiled text would be reused).
// The sample is typed with every field of ListFilter and ListPage required, so a new field that
// is left out of it fails the typecheck.
import t from 'tap'
import { queryBuilder } from '../../src/db/compiled-query.js'
import { checkFilter } from '../../src/features/filters/cql2.js'
import { searchBoxes } from '../../src/sources/search-box.js'
import { LIST_INPUT_SHAPE_KEYS, type ListFilter, type ListInput, type ListPage, attributeTypesQuery, countQuery, countedPageQuery, listPageQuery, pageAttributeTypesQuery, rangeBoundsQuery, rangeFeaturesQuery, rangeRowsQuery, sortOrder } from '../../src/sources/sources.listing.js'
import { SORTABLE } from '../../src/sources/source-properties.js'

const checked = checkFilter(`feature_id LIKE 'f-%' AND area_m2 BETWEEN 1 AND 2e6 AND version IN (1, 2) AND NOT conflict = TRUE AND updated_at IS NOT NULL
  AND S_INTERSECTS(geometry, POLYGON((0 0, 1 0, 1 1, 0 0))) AND S_WITHIN(geometry, BBOX(-10, -10, 10, 10))
  AND T_DURING(INTERVAL(start_at, end_at), INTERVAL('2020-01-01T00:00:00Z', '2030-01-01T00:00:00Z')) AND created_at > DATE('2020-01-01') AND id <> 'src_x'`, 'cql2-text')
if ('error' in checked) throw new Error(checked.error)

const filter: Required<ListFilter> = {
  boxes: searchBoxes(170, -5, -170, 5),
  datetime: { from: '2024-01-01T00:00:00Z', to: '2025-01-01T00:00:00Z' },
  organisation: 'org-b',
  expr: checked.expr,
  projectedBox: { srid: 28992, minX: 100000, minY: 400000, maxX: 200000, maxY: 500000 }
}

function inputs (field: string): ListInput[] {
  const sort = sortOrder([{ field, descending: true }])
  // `until` and `ranges` bound an ascending id order only (a bulk export's ranges): sampled on their own.
  const page: Omit<Required<ListPage>, 'until' | 'ranges'> = { sort, after: { values: sort.slice(0, -1).map(() => '2024-01-01T00:00:00Z'), id: 'src_1' }, limit: 7 }
  const range: Required<ListPage> = { sort: sortOrder([{ field: 'id', descending: false }]), after: { values: [], id: 'src_1' }, until: 'src_9', limit: 7, ranges: 3 }
  return [
    { scope: { organisation: 'org-a' }, filter, page, cap: 100 },
    { scope: 'all', filter, page, cap: 100 },
    ...field === 'id' ? [{ scope: { organisation: 'org-a' }, filter, page: range, cap: 100 }] : []
  ]
}

/** Each variant of the input with one parameter (a string or number not under a shape key) changed. */
function variants (input: unknown): unknown[] {
  const out: unknown[] = []
  const visit = (value: unknown, key: string, replace: (v: unknown) => unknown): void => {
    if (typeof value === 'string' && !LIST_INPUT_SHAPE_KEYS.includes(key)) out.push(replace(`${value}x`))
    else if (typeof value === 'number' && !LIST_INPUT_SHAPE_KEYS.includes(key)) out.push(replace(value + 1))
    else if (Array.isArray(value)) value.forEach((v, i) => { visit(v, key, (nv) => replace(value.map((w, j) => j === i ? nv : w))) })
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) visit(v, k, (nv) => replace({ ...value, [k]: nv }))
    }
  }
  visit(input, '', (v) => v)
  return out
}

t.test('no value outside the shape keys changes a listing\'s SQL', async (t) => {
  for (const field of SORTABLE) {
    for (const input of inputs(field)) {
      for (const build of [listPageQuery, countedPageQuery, countQuery, rangeBoundsQuery, rangeFeaturesQuery, rangeRowsQuery, attributeTypesQuery, pageAttributeTypesQuery]) {
        const sql = build(queryBuilder, input).compile().sql
        const changed = variants(input)
        t.ok(changed.length > 20, 'the sample has parameters to change')
        for (const variant of changed) {
          if (build(queryBuilder, variant as ListInput).compile().sql !== sql) {
            t.fail(`${build.name}, sort ${field}: a value outside LIST_INPUT_SHAPE_KEYS changed the SQL: ${JSON.stringify(variant).slice(0, 300)}`)
          }
        }
      }
    }
  }
})

t.test('the shape keys do change it', async (t) => {
  const [org, all] = inputs('id') as [ListInput, ListInput]
  t.not(listPageQuery(queryBuilder, org).compile().sql, listPageQuery(queryBuilder, all).compile().sql, 'scope')
  t.not(listPageQuery(queryBuilder, org).compile().sql, listPageQuery(queryBuilder, inputs('start_at')[0] as ListInput).compile().sql, 'the sort field')
})
