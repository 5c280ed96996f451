// A client generated from the document the service serves, as a user would make one: the types
// by openapi-typescript from GET /openapi.json, the calls by openapi-fetch. The seed's flow
// (generated-client/flow.ts: token, create, get, a page of items with bbox and its next cursor,
// delete, a 410, a 422) is compiled with tsc --noEmit against those types, then run against the
// service over a socket. A document whose change breaks that client fails here: shown by
// compiling the same flow against a document without the seed's GET /sources/.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { copyFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, createDatabase, startService, targetConfig, tempDir } from '../helper.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')

const target = await createDatabase(t)
const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
const account = await addAccount(db, { role: 'editor', organisation: 'org-client' })
await db.destroy()
const service = await startService(t, target)
// No assertion at the top level until the last await before the subtests: once the root test has
// a teardown (the service's), tap ends it when it is idle for three timer turns, and an assertion
// makes it idle. Reading the document (larger since the six media types of the items) took longer
// than that, and the subtests then came after the end.
const served = await fetch(`${service.base}/openapi.json`)
const document = await served.json() as { paths: Record<string, Record<string, unknown>> }
t.equal(served.status, 200)

/** A directory with the flow, the types generated from `doc`, a tsconfig, and the project's node_modules. */
async function project (doc: unknown): Promise<string> {
  const dir = await tempDir(t, 'sr-client-')
  await writeFile(join(dir, 'api.d.ts'), astToString(await openapiTS(doc as Parameters<typeof openapiTS>[0])))
  await copyFile(join(root, 'test/clients/generated-client/flow.ts'), join(dir, 'flow.ts'))
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023', 'DOM'], types: ['node'],
      strict: true, noUncheckedIndexedAccess: true, outDir: 'out', rootDir: '.'
    },
    include: ['flow.ts', 'api.d.ts']
  }))
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return dir
}

const compile = (dir: string, ...flags: string[]) => spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json'), ...flags], { encoding: 'utf8', timeout: 120_000 })

t.test('the seed\'s flow, typechecked against the served document and run against the service', async (t) => {
  const dir = await project(document)
  const checked = compile(dir, '--noEmit')
  t.equal(checked.status, 0, `tsc --noEmit: ${checked.stdout}${checked.stderr}`)
  const emitted = compile(dir, '--noCheck')
  t.equal(emitted.status, 0, `tsc: ${emitted.stdout}${emitted.stderr}`)
  const run = spawnSync(process.execPath, [join(dir, 'out/flow.js'), service.base, account.email, account.password], { encoding: 'utf8', timeout: 120_000 })
  t.equal(run.status, 0, `the flow: ${run.stderr}`)
  t.match(JSON.parse(run.stdout), {
    expiresIn: 3600,
    created: 3,
    got: /^src_/,
    pages: [2, 1],
    deleted: /deleted/,
    gone: 'GONE',
    invalid: 'INVALID_PERIOD',
    pointer: '/features/0/properties'
  })
})

t.test('a document without the seed\'s GET /sources/ breaks the compile', async (t) => {
  const rest = { ...document.paths['/sources/'] }
  delete rest.get
  const dir = await project({ ...document, paths: { ...document.paths, '/sources/': rest } })
  const checked = compile(dir, '--noEmit')
  t.not(checked.status, 0)
  t.match(checked.stdout, /flow\.ts.*error TS/)
})
