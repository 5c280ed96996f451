// Preload for the service the tests spawn (test/helper.ts startService): each response outside
// the document it serves is written to stderr as one line, which the test that started it fails on.
/* eslint-disable @typescript-eslint/no-require-imports -- a --require preload is CommonJS: like dist/main.cjs it must run before the ES module loader starts libuv's threadpool. */
const { SERVICE_MARK, checkResponses } = require('./response-check.cjs')

checkResponses({ report: (violation) => process.stderr.write(`${SERVICE_MARK}${JSON.stringify(violation)}\n`) })
