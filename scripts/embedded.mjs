// `npm run embedded` (run by `prepare`, so by `npm ci` and `npm install`): the embedded backend's
// install-time artefacts in dist/embedded/. PostGIS unpacked from its package, so that a start
// loads it only when a query needs it (src/db/embedded-postgis.ts), and the migrated template that
// a first start copies (src/db/embedded-template.ts). Each is made again only when it is not
// current: another package version, or a file of sql/ it lacks or holds in another text.
import { unpackPostgis } from '../dist/db/embedded-postgis.js'
import { buildEmbeddedTemplate } from '../dist/db/embedded.js'
import { TEMPLATE_DIR } from '../dist/db/embedded-template.js'

const log = (msg) => process.stderr.write(`[embedded] ${msg}\n`)
const started = performance.now()
const seconds = () => `${((performance.now() - started) / 1000).toFixed(1)} s`

const postgis = await unpackPostgis()
log(postgis.unpacked ? `unpacked PostGIS (package ${postgis.version}) into dist/embedded/postgis (${seconds()})` : `PostGIS (package ${postgis.version}) already unpacked`)
log('making the migrated template of the embedded database unless it is current')
const template = await buildEmbeddedTemplate(TEMPLATE_DIR)
log(template.built ? `made the template with ${template.migrations} files of sql/ in dist/embedded/template (${seconds()})` : `the template is current (${template.migrations} files of sql/)`)
