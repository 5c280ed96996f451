// The floor of the CLI's FlatGeobuf export (bench/bulk.mjs runs it beside the export): the same
// statements (rangeBoundsQuery, then rangeRowsQuery's binary form over the same id ranges, two at
// a time on the CLI's two connections), read the same way (binary COPY through pg-copy-streams,
// each range's rows parsed into their fields' places), every row dropped as it comes: no
// encoding, no file, no sort. It leaves out the export's first pass,
// the attributes' types (attributeTypesQuery; docs/performance.md gives its time). What the
// export costs beyond these is FlatGeobuf's.
// Usage: DATABASE_URL=… node bench/export-floor.mjs ORG   (prints the rows read and the seconds)
import { loadConfig } from '../dist/config.js'
import { openDatabase } from '../dist/db/open.js'
import { sourceStore } from '../dist/sources/sources.store.js'
import { parseItemsQuery } from '../dist/features/features.query.js'
import { fileAxes } from '../dist/features/formats/formats.js'
import { featureBinaryChunks } from '../dist/features/features.pager.js'
import { crsCatalogue } from '../dist/sources/crs.js'

const org = process.argv[2] ?? 'bench'
const config = loadConfig()
const { db } = await openDatabase(config, { poolMax: 2 })
const store = sourceStore(db)
const scope = { organisation: org }
const { parsed } = parseItemsQuery({ organisation: org }, false, crsCatalogue(config.CRS_EPSG.split(',').map(Number)))
parsed.limit = Number.MAX_SAFE_INTEGER
const page = fileAxes({ store, scope, parsed, self: new URL('http://export/'), digest: () => '', rowsPerQuery: 2000, countMax: 100_000_000, fixedChunks: true, matching: () => {} }, 'fgb')
const t0 = process.hrtime.bigint()
let rows = 0
for await (const chunk of featureBinaryChunks(page)) rows += chunk.count
const s = Number(process.hrtime.bigint() - t0) / 1e9
await db.destroy()
console.log(JSON.stringify({ rows, s }))
