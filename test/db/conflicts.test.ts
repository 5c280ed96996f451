// Conflicts in the database (the rule in sql/functions/conflict_rule.sql, the history of its
// changes in sql/007 to sql/012): the view source_conflicts holds every pair of
// sources whose periods overlap (half-open) and whose areas still intersect after each is shrunk
// inward by sources_conflict_tolerance_m() (9 m), in both directions, across organisations, for
// rows written with plain SQL; with the overlap's area, ratio and period. Kept by triggers.
import t from 'tap'
import { sql } from 'kysely'
import { addAccount, backend, build } from '../helper.js'

const { db } = await build(t)
const owner = await addAccount(db, { role: 'editor', organisation: 'org-a' })

let n = 0
const nextId = () => `src_conflict${String(++n).padStart(8, '0')}`
/** A box in lon/lat degrees. */
const box = (w: number, s: number, e: number, north: number) => `POLYGON((${w} ${s},${e} ${s},${e} ${north},${w} ${north},${w} ${s}))`
// Metres at the equator, in degrees: 1° of longitude is 111,319.49 m there.
const m = (metres: number) => metres / 111319.49

async function insert (geom: string, { period = '[2024-01-01Z,2024-02-01Z)', org = 'org-a' }: { period?: string, org?: string } = {}): Promise<string> {
  const id = nextId()
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES (
    ${id}, ${`f${n}`}, ${org}, ${owner.id}::uuid, ST_GeomFromText(${geom}, 4326), ${period}::tstzrange)`.execute(db)
  return id
}
async function conflictsOf (id: string): Promise<Array<{ other_id: string, overlap_m2: number, overlap_ratio: number, overlap_period: string }>> {
  return (await sql<{ other_id: string, overlap_m2: number, overlap_ratio: number, overlap_period: string }>`
    SELECT other_id, overlap_m2, overlap_ratio, overlap_period::text AS overlap_period FROM source_conflicts WHERE source_id = ${id} ORDER BY other_id`.execute(db)).rows
}
const others = async (id: string) => (await conflictsOf(id)).map((c) => c.other_id)

t.test('touching edges, and an overlap thinner than the band: no conflict', async (t) => {
  const a = await insert(box(0, 0, 0.01, 0.01))
  const touching = await insert(box(0.01, 0, 0.02, 0.01))
  const thin = await insert(box(0.01 - m(17), 0.02, 0.02, 0.03))
  const under = await insert(box(0, 0.02, 0.01, 0.03))
  t.same(await others(a), [])
  t.same(await others(touching), [])
  t.same(await others(thin), [], 'a 17 m wide overlap: shrunk by 9 m on each side, nothing is left')
  t.same(await others(under), [])
})

t.test('an overlap deeper than the band: a conflict, in both directions, with its area', async (t) => {
  const a = await insert(box(1, 0, 1.01, 0.01))
  const b = await insert(box(1.005, 0.005, 1.015, 0.015))
  const [ab] = await conflictsOf(a)
  const [ba] = await conflictsOf(b)
  t.equal(ab?.other_id, b)
  t.equal(ba?.other_id, a)
  const expected = Number((await sql<{ area: number }>`SELECT lonlat_area_m2(ST_GeomFromText(${box(1.005, 0.005, 1.01, 0.01)}, 4326)) AS area`.execute(db)).rows[0]?.area)
  t.ok(Math.abs((ab?.overlap_m2 ?? 0) - expected) < 1e-6, `overlap ${ab?.overlap_m2} m², the intersection box's ${expected}`)
  t.ok(Math.abs((ab?.overlap_ratio ?? 0) - 0.25) < 1e-3, 'a quarter of each')
  t.equal(ab?.overlap_m2, ba?.overlap_m2, 'symmetric')
})

t.test('the band\'s edge: 20 m deep conflicts, 17 m does not (the exact test, on the ellipsoid)', async (t) => {
  // 100 m long strips: too short for the area bound, so the shrunk intersection decides.
  const base = await insert(box(2, 0, 2.01, m(100)))
  const deep = await insert(box(2.01 - m(20), 0, 2.02, m(100)), { period: '[2024-01-10Z,2024-03-01Z)' })
  const shallow = await insert(box(2 - 0.01, 0, 2 + m(17), m(100)), { period: '[2024-01-10Z,2024-03-01Z)' })
  t.same(await others(base), [deep])
  t.same(await others(shallow), [])
  t.equal((await conflictsOf(base))[0]?.overlap_period, '["2024-01-10 00:00:00+00","2024-02-01 00:00:00+00")', 'the common period')
})

t.test('the exact test both ways: a 19 m strip holds a 9 m disk, a thin triangle does not', async (t) => {
  const base = await insert(box(2.5, 0, 2.51, m(100)))
  const strip = await insert(box(2.51 - m(19), 0, 2.52, m(100)))
  t.same(await others(strip), [base], '19 m wide: 1 m is left after shrinking')
  // A right triangle with legs of 100 m and 19 m has an inscribed circle of radius 8.6 m: no 9 m
  // disk fits, though its bounding box is wider than 18 m both ways.
  const triangle = await insert(`POLYGON((2.6 0,${2.6 + m(100)} 0,2.6 ${m(19)},2.6 0))`)
  const cover = await insert(box(2.599, -0.001, 2.602, 0.001))
  t.same(await others(triangle), [], 'inside the cover, and too thin to be claimed twice')
  t.same(await others(cover), [])
})

t.test('periods: adjacent [a,b) and [b,c) do not conflict, overlapping ones do', async (t) => {
  const a = await insert(box(3, 0, 3.01, 0.01), { period: '[2024-01-01Z,2024-02-01Z)' })
  const next = await insert(box(3, 0, 3.01, 0.01), { period: '[2024-02-01Z,2024-03-01Z)' })
  t.same(await others(a), [])
  t.same(await others(next), [])
  const overlapping = await insert(box(3, 0, 3.01, 0.01), { period: '[2024-01-31T23:59:59Z,2024-02-02Z)' })
  t.same((await others(overlapping)).sort(), [a, next].sort(), 'the same area, one second in common with each')
})

t.test('three-way overlap, across organisations; a large area against many small ones', async (t) => {
  const a = await insert(box(4, 0, 4.02, 0.02))
  const b = await insert(box(4.01, 0, 4.03, 0.02), { org: 'org-b' })
  const c = await insert(box(4.005, 0.01, 4.025, 0.03), { org: 'org-c' })
  t.same(await others(a), [b, c].sort())
  t.same(await others(b), [a, c].sort())
  t.same(await others(c), [a, b].sort())
  const small = []
  for (let i = 0; i < 20; i++) small.push(await insert(box(5 + i * 0.01, 0, 5 + i * 0.01 + 0.005, 0.005)))
  const large = await insert(box(4.999, -0.001, 5.2, 0.006))
  t.same(await others(large), small.sort())
  for (const s of small.slice(0, 3)) t.same(await others(s), [large])
})

t.test('areas at the antimeridian: adjacent across it, no conflict; overlapping on one side, a conflict', async (t) => {
  const east = await insert(box(179.99, 10, 180, 10.01))
  const west = await insert(box(-180, 10, -179.99, 10.01))
  t.same(await others(east), [])
  t.same(await others(west), [])
  const eastToo = await insert(box(179.995, 10, 180, 10.01))
  t.same(await others(east), [eastToo])
})

t.test('plain SQL: an inserted row conflicts at once, a deleted one is gone from its partner at once', async (t) => {
  const a = await insert(box(6, 0, 6.01, 0.01))
  const b = await insert(box(6.005, 0, 6.015, 0.01))
  t.same(await others(a), [b])
  await sql`DELETE FROM sources WHERE id = ${b}`.execute(db)
  t.same(await others(a), [])
})

t.test('plain SQL: an UPDATE moves a source\'s conflicts with it', async (t) => {
  const a = await insert(box(6.5, 0, 6.51, 0.01))
  const b = await insert(box(6.6, 0, 6.61, 0.01))
  t.same(await others(a), [])
  await sql`UPDATE sources SET geom = ST_Translate(geom, -0.095, 0) WHERE id = ${b}`.execute(db)
  t.same(await others(a), [b], 'moved onto a')
  t.same(await others(b), [a])
  await sql`UPDATE sources SET period = '[2025-01-01Z,2025-02-01Z)' WHERE id = ${b}`.execute(db)
  t.same(await others(a), [], 'moved to another year')
})

t.test('one statement of many rows: pairs among the new rows and with the old, each once', async (t) => {
  const old = await insert(box(7, 0, 7.01, 0.01))
  const ids = [nextId(), nextId(), nextId()]
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT id, id, 'org-a', ${owner.id}::uuid, ST_MakeEnvelope(7.005 + i * 0.001, 0, 7.012 + i * 0.001, 0.01, 4326), '[2024-01-01Z,2024-02-01Z)'
    FROM unnest(${ids}::text[]) WITH ORDINALITY AS u(id, i)`.execute(db)
  t.same(await others(old), [...ids].sort())
  for (const id of ids) t.same(await others(id), [old, ...ids.filter((o) => o !== id)].sort(), `${id}: the old one and the two others`)
  const pairs = await sql<{ n: string }>`SELECT count(*) AS n FROM source_conflict_pairs WHERE source_id = ANY(${[old, ...ids]}::text[])`.execute(db)
  t.equal(Number(pairs.rows[0]?.n), 12, '6 pairs, both directions')
})

t.test('the whole world and a 180°-wide sliver: recorded, no error', async (t) => {
  const world = await insert(box(-180, -90, 180, 90), { period: '[2030-01-01Z,2030-02-01Z)' })
  const sliver = await insert('POLYGON((0 0,180 0,1 1,0 1,0 0))', { period: '[2030-01-01Z,2030-02-01Z)' })
  const tiny = await insert(box(10, 10, 10.001, 10.001), { period: '[2030-01-01Z,2030-02-01Z)' })
  t.same(await others(world), [sliver, tiny].sort())
  const [ws] = await conflictsOf(sliver)
  t.ok(ws !== undefined && Math.abs(ws.overlap_ratio - 1) < 1e-9, 'the sliver lies wholly in the world')
})

t.test('a corner digitised twice, a rounding apart: GEOS\'s predicate gives up, the insert does not', async (t) => {
  // Found by make bench: a 500-vertex circle posted through the API, and a diamond inserted with
  // ST_Translate, whose shared corner came out as -6.769 and -6.768999999999999. GEOS's
  // ST_Intersects throws "side location conflict" on them, and sql/008's rule called it
  // unprotected: the INSERT failed (a 500 for a valid POST).
  const circle = Array.from({ length: 500 }, (_, i) => {
    const a = (2 * Math.PI * (i % 499)) / 499
    return `${+(-6.77 + +(0.001 * Math.cos(a)).toFixed(7)).toFixed(7)} ${+(37.07 + +(0.001 * Math.sin(a)).toFixed(7)).toFixed(7)}`
  })
  const period = { period: '[2031-01-01Z,2031-02-01Z)' }
  const diamond = await insert('POLYGON((-6.768999999999999 37.07,-6.77 37.071,-6.771 37.07,-6.77 37.069,-6.768999999999999 37.07))', period)
  const round = await insert(`POLYGON((${circle.join(',')}))`, period)
  const [c] = await conflictsOf(diamond)
  t.equal(c?.other_id, round, 'the circle holds the diamond: a conflict')
  const area = Number((await sql<{ a: number }>`SELECT area_m2 AS a FROM sources WHERE id = ${diamond}`.execute(db)).rows[0]?.a)
  t.ok(c !== undefined && Math.abs(c.overlap_m2 - area) < 1e-6 * area, `overlap ${c?.overlap_m2} m², the diamond's area ${area}`)
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/**
 * `first` in a transaction that stays open while `second` starts (and, if it must, waits for
 * it); then the first commits, and both are awaited.
 */
async function whileOpen (first: (trx: typeof db) => Promise<unknown>, second: () => Promise<unknown>): Promise<void> {
  let commit: () => void = () => {}
  const held = new Promise<void>((resolve) => { commit = resolve })
  const running = db.transaction().execute(async (trx) => {
    await first(trx)
    await held
  })
  await sleep(100)
  const waiting = second()
  await sleep(200)
  commit()
  await Promise.all([running, waiting])
}
const insertIn = (trx: typeof db, id: string, x: number) => sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES (
  ${id}, ${id}, 'org-a', ${owner.id}::uuid, ST_MakeEnvelope(${x}::float8, 0, ${x + 0.01}::float8, 0.01, 4326), '[2024-01-01Z,2024-02-01Z)')`.execute(trx)
const pairsWith = async (id: string) => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM source_conflict_pairs WHERE source_id = ${id} OR other_id = ${id}`.execute(db)).rows[0]?.n)

t.test('concurrent inserts of overlapping areas in two transactions: the pair is recorded', { skip: backend === 'embedded' ? 'one connection: transactions cannot interleave' : false }, async (t) => {
  // Each transaction's trigger runs before the other commits; the cell lock makes the second
  // wait for the first and then see it.
  const a = nextId()
  const b = nextId()
  await whileOpen((trx) => insertIn(trx, a, 8), () => db.transaction().execute((trx) => insertIn(trx, b, 8.005)))
  t.same(await others(a), [b])
  t.same(await others(b), [a])
})

// sql/012: partners are not locked row by row; a delete takes the cell locks of the areas it
// deletes, so of an insert and a delete of overlapping areas the second waits for the first.
t.test('an insert and a delete of overlapping areas at the same moment: no pair outlives the deleted source', { skip: backend === 'embedded' ? 'one connection: transactions cannot interleave' : false }, async (t) => {
  // The insert first, still open when the delete of its partner comes: the delete waits, then
  // removes the pair the insert recorded.
  const partner = await insert(box(8.5, 0, 8.51, 0.01))
  const added = nextId()
  await whileOpen((trx) => insertIn(trx, added, 8.505), () => sql`DELETE FROM sources WHERE id = ${partner}`.execute(db))
  t.same(await others(added), [], 'the insert first: its pair went with the deleted partner')
  t.equal(await pairsWith(partner), 0)

  // The delete first, still open when an overlapping insert comes: the insert waits, then finds
  // the partner gone.
  const gone = await insert(box(8.6, 0, 8.61, 0.01))
  const late = nextId()
  await whileOpen((trx) => sql`DELETE FROM sources WHERE id = ${gone}`.execute(trx), () => db.transaction().execute((trx) => insertIn(trx, late, 8.605)))
  t.same(await others(late), [], 'the delete first: the insert did not pair with it')
  t.equal(await pairsWith(gone), 0)
})

// sql/012: when one area covers the common part of the two bounding boxes, the rule clips the
// other by that box instead of running GEOS's overlay. Both must give the same answers.
t.test('the rule by a clip of the common box and by GEOS\'s overlay agree, whatever the shapes', async (t) => {
  const r = await db.transaction().execute(async (trx) => {
    // JIT would compile this one-off query's many expressions for longer than it runs.
    await sql`SET LOCAL jit = off`.execute(trx)
    await sql`SELECT setseed(0.25)`.execute(trx)
    return (await sql<{ pairs: string, clipped: string, conflicts: string, differ: string, worst: number | null }>`
      WITH params AS (
        SELECT n, 30 + random() * 0.02 AS x, random() * 0.02 AS y, 0.001 + random() * 0.007 AS w, 0.001 + random() * 0.007 AS h
        FROM generate_series(1, 60) AS n
      ), shapes AS (
        SELECT n, CASE n % 4
          WHEN 0 THEN ST_MakeEnvelope(x, y, x + w, y + h, 4326)
          WHEN 1 THEN ST_Rotate(ST_MakeEnvelope(x, y, x + w, y + w, 4326), n, x + w / 2, y + w / 2)
          -- star-shaped about (x, y), so simple whatever the radii
          WHEN 2 THEN (SELECT ST_MakePolygon(ST_AddPoint(l, ST_StartPoint(l))) FROM (
            SELECT ST_MakeLine(ST_SetSRID(ST_MakePoint(x + w * (0.3 + 0.7 * random()) * cos(2 * pi() * k / 9),
              y + w * (0.3 + 0.7 * random()) * sin(2 * pi() * k / 9)), 4326) ORDER BY k) AS l
            FROM generate_series(0, 8) AS k) AS star)
          ELSE ST_MakePolygon(ST_ExteriorRing(ST_MakeEnvelope(x, y, x + w, y + h, 4326)),
            ARRAY[ST_ExteriorRing(ST_MakeEnvelope(x + w / 3, y + h / 3, x + 2 * w / 3, y + 2 * h / 3, 4326))])
        END AS g FROM params
      ), judged AS MATERIALIZED (
        SELECT lonlat_conflict_overlap_m2(a.g, b.g, tol.t) AS fast,
          (SELECT CASE WHEN lonlat_fits_disk(o.i, lonlat_area_m2(o.i), tol.t) THEN lonlat_area_m2(o.i) END
            FROM (SELECT lonlat_polygonal_overlay(a.g, b.g) AS i) AS o) AS overlay,
          ST_Covers(a.g, c.k) OR ST_Covers(b.g, c.k) AS clipped
        FROM shapes AS a
        JOIN shapes AS b ON a.n < b.n AND a.g && b.g
        CROSS JOIN LATERAL (SELECT ST_MakeEnvelope(greatest(ST_XMin(a.g), ST_XMin(b.g)), greatest(ST_YMin(a.g), ST_YMin(b.g)),
          least(ST_XMax(a.g), ST_XMax(b.g)), least(ST_YMax(a.g), ST_YMax(b.g)), 4326) AS k) AS c
        CROSS JOIN (VALUES (0::float8), (9), (40)) AS tol (t)
      )
      SELECT count(*) AS pairs, count(*) FILTER (WHERE clipped) AS clipped, count(fast) AS conflicts,
        count(*) FILTER (WHERE (fast IS NULL) <> (overlay IS NULL)) AS differ,
        max(abs(fast - overlay) / overlay) AS worst
      FROM judged`.execute(trx)).rows[0]
  })
  const pairs = Number(r?.pairs)
  const clipped = Number(r?.clipped)
  t.ok(pairs > 300, `${pairs} pairs of shapes whose boxes overlap (× 3 tolerances)`)
  t.ok(clipped > pairs / 5 && clipped < pairs, `${clipped} of them by the clip, the rest by the overlay`)
  t.ok(Number(r?.conflicts) > 0 && Number(r?.conflicts) < pairs, `${r?.conflicts} conflicts`)
  t.equal(Number(r?.differ), 0, 'the same decision for every pair')
  t.ok((r?.worst ?? 0) < 1e-9, `overlap areas within ${r?.worst} of each other`)
})

// sql/011 lists the cells in plpgsql where sql/008 did it with generate_series in SQL; the keys,
// levels and thresholds must not change. Expected here from sql/008's formulas: fine cells
// (0.01°) are ((x + 18000) * 18001 + (y + 9000)) under class 1397048163, coarse cells (1°)
// ((x + 180) * 181 + (y + 90)) under 1397048164, everything is key -1 of the fine class.
t.test('the advisory locks of conflict detection: the same keys and modes at each level', { skip: backend === 'embedded' ? 'PGlite has no pg_locks of advisory locks to read' : false }, async (t) => {
  const FINE = 1397048163
  const COARSE = 1397048164
  type Box = [number, number, number, number]
  const cells = (b: Box, scale: number) => {
    const out: Array<[number, number]> = []
    for (let x = Math.floor(b[0] * scale); x <= Math.floor(b[2] * scale); x++) {
      for (let y = Math.floor(b[1] * scale); y <= Math.floor(b[3] * scale); y++) out.push([x, y])
    }
    return out
  }
  const fineKeys = (bs: Box[]) => bs.flatMap((b) => cells(b, 100).map(([x, y]) => (x + 18000) * 18001 + (y + 9000)))
  const coarseKeys = (bs: Box[]) => bs.flatMap((b) => cells(b, 1).map(([x, y]) => (x + 180) * 181 + (y + 90)))
  const all = (klass: number, keys: number[], mode: string) => [...new Set(keys)].map((k) => `${klass}/${k >>> 0}/${mode}`)
  const cases: Array<{ name: string, boxes: Box[], expected: string[] }> = []
  const small: Box[] = [[12.004, -0.013, 12.021, 0.002], [12.5, 3.5, 12.5033, 3.5033], [12.004, -0.013, 12.005, -0.012]]
  cases.push({ name: 'small areas: fine cells exclusive, their 1° cells shared', boxes: small, expected: [`${FINE}/${-1 >>> 0}/ShareLock`, ...all(COARSE, coarseKeys(small), 'ShareLock'), ...all(FINE, fineKeys(small), 'ExclusiveLock')] })
  const medium: Box[] = [[-1.5, -0.5, 1.2, 0.7]]
  cases.push({ name: 'over 64 fine cells: 1° cells exclusive', boxes: medium, expected: [`${FINE}/${-1 >>> 0}/ShareLock`, ...all(COARSE, coarseKeys(medium), 'ExclusiveLock')] })
  const large: Box[] = [[-10, -10, 10, 10]]
  cases.push({ name: 'over 64 1° cells: everything, exclusive', boxes: large, expected: [`${FINE}/${-1 >>> 0}/ExclusiveLock`] })
  for (const c of cases) {
    const taken = await db.transaction().execute(async (trx) => {
      const boxes = c.boxes.map(([w, s, e, north]) => `BOX(${w} ${s},${e} ${north})`)
      await sql`SELECT sources_conflict_lock(${`{${boxes.map((b) => `"${b}"`).join(',')}}`}::box2d[])`.execute(trx)
      return (await sql<{ k: string }>`SELECT classid || '/' || objid || '/' || mode AS k FROM pg_locks
        WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid IN (${FINE}, ${COARSE})`.execute(trx)).rows.map((r) => r.k).sort()
    })
    t.same(taken, [...c.expected].sort(), c.name)
  }
})

t.test('the tolerance: changed, every pair is computed again; a 17 m overlap counts at 0 m', async (t) => {
  const a = await insert(box(9, 0, 9.01, 0.01))
  const b = await insert(box(9.01 - m(17), 0, 9.02, 0.01))
  t.same(await others(a), [])
  const changed = await sql<{ n: string | null }>`SELECT sources_set_conflict_tolerance(0) AS n`.execute(db)
  t.ok(Number(changed.rows[0]?.n) > 0, `${changed.rows[0]?.n} pairs`)
  t.same(await others(a), [b])
  const touching = await insert(box(9.02, 0, 9.03, 0.01))
  t.same(await others(touching), [], 'touching is no overlap of positive area')
  const again = await sql<{ n: string | null }>`SELECT sources_set_conflict_tolerance(0) AS n`.execute(db)
  t.equal(again.rows[0]?.n, null, 'unchanged: nothing recomputed')
  await sql`SELECT sources_set_conflict_tolerance(9)`.execute(db)
  t.same(await others(a), [])
})

t.test('TRUNCATE sources empties the pairs too', async (t) => {
  await insert(box(11, 0, 11.01, 0.01))
  await insert(box(11.005, 0, 11.015, 0.01))
  await sql`TRUNCATE sources`.execute(db)
  const left = await sql<{ n: string }>`SELECT count(*) AS n FROM source_conflict_pairs`.execute(db)
  t.equal(Number(left.rows[0]?.n), 0)
})

// The rule's EXCEPTION block opens a subtransaction, which a parallel query may not: declared
// PARALLEL SAFE (sql/008, sql/009), an analyst's query over many sources failed once planned in
// parallel. sql/010 keeps any query that calls it out of parallel plans.
t.test('an analyst\'s query calling the rule over a table is never planned in parallel', { skip: backend === 'embedded' ? 'PGlite has no parallel workers' : false }, async (t) => {
  const a = await insert(box(20, 0, 20.01, 0.01))
  const b = await insert(box(20.005, 0, 20.015, 0.01))
  const rows = await db.transaction().execute(async (trx) => {
    // Every query that may be parallel is run in a worker (PostgreSQL 15's name, then 16's).
    const version = Number((await sql<{ v: string }>`SELECT current_setting('server_version_num') AS v`.execute(trx)).rows[0]?.v)
    await sql.raw(`SET LOCAL ${version >= 160000 ? 'debug_parallel_query' : 'force_parallel_mode'} = on`).execute(trx)
    return (await sql<{ m: number | null }>`SELECT lonlat_conflict_overlap_m2(s.geom, o.geom, 9) AS m
      FROM sources AS s JOIN sources AS o ON o.geom && s.geom AND o.id <> s.id WHERE s.id = ${a}`.execute(trx)).rows
  })
  t.equal(rows.length, 1)
  t.ok((rows[0]?.m ?? 0) > 0, 'their overlap, computed')
  t.same(await others(a), [b])
  const unsafe = await sql<{ p: string }>`SELECT proparallel AS p FROM pg_proc WHERE proname = 'lonlat_conflict_overlap_m2'`.execute(db)
  t.same(unsafe.rows.map((r) => r.p), ['u'])
})

t.test('the view, the table and their functions are documented', async (t) => {
  const comments = (await sql<{ name: string, comment: string | null }>`
    SELECT 'view' AS name, obj_description('source_conflicts'::regclass, 'pg_class') AS comment
    UNION ALL SELECT a.attname, col_description('source_conflicts'::regclass, a.attnum) FROM pg_attribute a WHERE a.attrelid = 'source_conflicts'::regclass AND a.attnum > 0
    UNION ALL SELECT 'table', obj_description('source_conflict_pairs'::regclass, 'pg_class')
    UNION ALL SELECT 'pairs.' || a.attname, col_description('source_conflict_pairs'::regclass, a.attnum) FROM pg_attribute a WHERE a.attrelid = 'source_conflict_pairs'::regclass AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT p.proname, obj_description(p.oid, 'pg_proc') FROM pg_proc p
      WHERE p.proname IN ('sources_conflict_tolerance_m', 'lonlat_fits_disk', 'lonlat_fits_disk_bounds', 'lonlat_polygonal_overlay', 'lonlat_polygonal_area_m2', 'lonlat_conflict_overlap_m2', 'lonlat_area_m2',
        'sources_set_conflict_tolerance', 'sources_recompute_conflicts', 'sources_conflict_lock', 'wgs84_area_density')
    UNION ALL SELECT t.tgname, obj_description(t.oid, 'pg_trigger') FROM pg_trigger t WHERE t.tgrelid = 'sources'::regclass AND t.tgname LIKE 'sources_conflicts_%'`.execute(db)).rows
  t.same(comments.filter((c) => c.comment === null || c.comment === '').map((c) => c.name), [])
  t.equal(comments.length, 28)
})
