// npm run docs:config: writes docs/operations.md's configuration tables from the schema
// (src/config-docs.ts, built into dist/ first). test/app/config-docs.test.ts checks they agree.
import { readFileSync, writeFileSync } from 'node:fs'
import { withConfigDocs } from '../dist/config-docs.js'

const file = new URL('../docs/operations.md', import.meta.url)
const before = readFileSync(file, 'utf8')
const after = withConfigDocs(before)
if (after !== before) writeFileSync(file, after)
process.stdout.write(`docs/operations.md: configuration tables ${after === before ? 'already up to date' : 'written'}\n`)
