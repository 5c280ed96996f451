// EMBEDDED_SQL_PORT: the embedded database served to PostgreSQL clients while the service runs
// (src/db/embedded-sql.ts). psql runs docs/analysts.md's connection and recipes against it and
// sees a source created through the API; QGIS (python3-qgis, headless: qgis-postgis.py) opens
// `sources` as a PostGIS layer and a query layer. The service outlives what analysts do: a long
// statement, a transaction held open and then killed (rolled back, the service's request served
// after it), COPY FROM STDIN and malformed bytes (refused before they reach PGlite); SIGTERM closes
// the port. Unset, the service listens on its HTTP port alone. Embedded backend only.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, freePort, startService, targetConfig, tempDir } from '../helper.js'
import { run } from './seeded.js'

const PYTHON = '/usr/bin/python3'
const QGIS_SCRIPT = fileURLToPath(new URL('./qgis-postgis.py', import.meta.url))
const hasPsql = spawnSync('psql', ['--version']).status === 0
const hasQgis = spawnSync(PYTHON, ['-c', 'import qgis.core'], { env: { ...process.env, QT_QPA_PLATFORM: 'offscreen' } }).status === 0 &&
  existsSync('/usr/lib/qgis/plugins/libprovider_postgres.so')

/** The TCP ports `pid` listens on, from /proc (its socket inodes in LISTEN state), as address:port. */
function listening (pid: number): string[] {
  const inodes = new Set(readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try { return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] } catch { return undefined }
  }).filter((i) => i !== undefined))
  const found: string[] = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(file)) continue
    for (const line of readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f[3] !== '0A' || !inodes.has(f[9] as string)) continue
      const [hex, port] = (f[1] as string).split(':') as [string, string]
      const address = hex.length === 8 ? (hex.match(/../g) as string[]).reverse().map((b) => parseInt(b, 16)).join('.') : hex
      found.push(`${address}:${parseInt(port, 16)}`)
    }
  }
  return found.sort()
}

if (backend === 'server') {
  t.plan(0, 'embedded backend only (with DATABASE_URL, connect to the PostGIS server itself)')
} else if (!hasPsql && process.env.CI !== 'true') {
  t.plan(0, 'psql is not installed (apt-get install postgresql-client-15; .ci/run installs it)')
} else {
  t.test('refused with DATABASE_URL, in one line', async (t) => {
    t.throws(() => loadConfig({ DATABASE_URL: 'postgres://u@h/d', EMBEDDED_SQL_PORT: '5433' }), /^invalid configuration: env EMBEDDED_SQL_PORT is set with DATABASE_URL [^\n]*$/)
    t.throws(() => loadConfig({ EMBEDDED_SQL_PORT: '3000', PORT: '3000' }), /EMBEDDED_SQL_PORT must differ from PORT/)
  })

  t.test('unset: nothing but the HTTP port listens', async (t) => {
    const service = await startService(t, await createDatabase(t))
    t.same(listening(service.child.pid as number), [`127.0.0.1:${new URL(service.base).port}`])
  })

  t.test('set: psql, QGIS, and a service that outlives its analysts', async (t) => {
    const target = await createDatabase(t)
    const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
    const editor = await addAccount(db, { role: 'editor', organisation: 'org-b' })
    await db.destroy()
    const sqlPort = await freePort()
    // HOST=0.0.0.0: the SQL port stays on loopback whatever HOST says.
    const service = await startService(t, target, { EMBEDDED_SQL_PORT: String(sqlPort), HOST: '0.0.0.0' })
    await service.waitFor(/served to PostgreSQL clients on 127\.0\.0\.1:\d+ \(EMBEDDED_SQL_PORT\)/)
    t.ok(listening(service.child.pid as number).includes(`127.0.0.1:${sqlPort}`), 'the SQL port is bound to 127.0.0.1')

    const psql = (sql: string, ...more: string[]) => run('psql', ['-h', '127.0.0.1', '-p', String(sqlPort), '-U', 'postgres', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql, ...more], { ...process.env, PGCONNECT_TIMEOUT: '10' }, 60_000)
    const token = ((await (await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: editor.email, password: editor.password }) })).json()) as { token: string }).token
    const auth = { authorization: `Bearer ${token}` }
    const created = await fetch(`${service.base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature('field-7', { coordinates: [[[5.1, 52.0], [5.2, 52.0], [5.2, 52.1], [5.1, 52.1], [5.1, 52.0]]] }))) })
    t.equal(created.status, 201)
    const items = async () => {
      const res = await fetch(`${service.base}/collections/sources/items`, { headers: auth })
      return ((await res.json()) as { features: unknown[] }).features.length
    }

    t.test('psql: the source created through the API, and the recipes of docs/analysts.md', async (t) => {
      const count = await psql('SELECT count(*) FROM sources')
      t.equal(count.status, 0, count.stderr)
      t.equal(count.stdout.trim(), '1', 'the source created through the API')
      const km2 = await psql('SELECT organisation, round(sum(area_m2) / 1e6) AS km2 FROM sources GROUP BY 1')
      t.equal(km2.stdout.trim(), 'org-b|76', 'the area recipe: 0.1° × 0.1° at 52° N is 76 km²')
      const inBox = await psql("SELECT feature_id FROM sources WHERE geom && ST_MakeEnvelope(5.0, 51.9, 5.3, 52.2, 4326) AND ST_Intersects(geom, ST_MakeEnvelope(5.0, 51.9, 5.3, 52.2, 4326)) AND period @> '2024-05-15T00:00:00Z'::timestamptz")
      t.equal(inBox.stdout.trim(), 'field-7', 'the spatial and temporal recipe')
      const who = await psql('SELECT current_user, usesuper FROM pg_user WHERE usename = current_user')
      t.equal(who.stdout.trim(), 'postgres|t', 'whoever connects is the superuser')
    })

    t.test('QGIS opens sources as a PostGIS layer, and a query layer', { skip: hasQgis || process.env.CI === 'true' ? false : 'QGIS is not installed (apt-get install python3-qgis qgis-providers)' }, async (t) => {
      const profile = await tempDir(t, 'sr-qgis-')
      const r = await run(PYTHON, [QGIS_SCRIPT, profile], { ...process.env, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: profile, SR_SQL_PORT: String(sqlPort) })
      const line = r.stdout.trim().split('\n').pop() ?? ''
      if (r.status !== 0 || !line.startsWith('{')) throw new Error(`qgis-postgis.py exited ${r.status ?? r.signal}: ${r.stdout}\n${r.stderr}`)
      const out = JSON.parse(line) as { qgis: string, valid: boolean, feature_count?: number, geometry?: string, crs?: string, feature_ids?: string[], query_valid: boolean, query_count?: number, error?: string }
      t.comment(`QGIS printed: ${line}`)
      t.equal(out.valid, true, `QGIS ${out.qgis} opens the PostGIS layer`)
      t.equal(out.feature_count, 1)
      t.equal(out.geometry, 'Polygon')
      t.equal(out.crs, 'EPSG:4326')
      t.same(out.feature_ids, ['field-7'])
      t.equal(out.query_valid, true, 'a query as a layer (DB Manager\'s "Load as new layer")')
      t.equal(out.query_count, 1)
      t.equal(await items(), 1, 'the service answers after QGIS')
    })

    t.test('a long statement holds the service until it ends, then all is answered', async (t) => {
      const long = psql('SELECT pg_sleep(1.5)')
      await new Promise((resolve) => setTimeout(resolve, 400))
      const started = performance.now()
      const health = await fetch(`${service.base}/health`)
      const waited = performance.now() - started
      t.equal(health.status, 200)
      t.comment(`GET /health during a 1.5 s analyst statement answered after ${Math.round(waited)} ms (PGlite runs in the service's thread)`)
      t.equal((await long).status, 0)
      t.equal(await items(), 1)
    })

    t.test('a transaction held open waits the service\'s queries; killed, it is rolled back and they go on', async (t) => {
      const held = spawn('psql', ['-h', '127.0.0.1', '-p', String(sqlPort), '-U', 'postgres', '-X', '-At'], { stdio: ['pipe', 'pipe', 'pipe'] })
      const exited = new Promise((resolve) => held.once('exit', resolve))
      let out = ''
      const deleted = new Promise<void>((resolve) => held.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; if (out.includes('DELETE 1')) resolve() }))
      held.stdin.write('BEGIN; DELETE FROM sources;\n')
      await deleted
      let answered = false
      const during = items().then((n) => { answered = true; return n })
      await new Promise((resolve) => setTimeout(resolve, 500))
      t.equal(answered, false, 'the service\'s read waits for the analyst\'s transaction (one session)')
      held.kill('SIGKILL')
      await exited
      t.equal(await during, 1, 'the killed client\'s DELETE was rolled back; the waiting read is answered')
      t.equal((await psql('SELECT count(*) FROM sources')).stdout.trim(), '1')
    })

    t.test('COPY FROM STDIN and malformed bytes are refused; the service goes on', async (t) => {
      const copy = await run('sh', ['-c', `printf 'x@example.org\\t1\\n' | psql -h 127.0.0.1 -p ${sqlPort} -U postgres -X -c "\\copy login_failures(email, failures) from stdin"`], process.env, 30_000)
      t.match(copy.stderr, /COPY FROM STDIN is not supported by the embedded database/)
      const copyOut = await psql('COPY (SELECT feature_id FROM sources) TO STDOUT')
      t.equal(copyOut.stdout.trim(), 'field-7', 'COPY … TO STDOUT (\\copy … to) works')
      const reply = await new Promise<Buffer>((resolve, reject) => {
        const body = Buffer.from('\0\x03\0\0user\0postgres\0database\0postgres\0\0', 'latin1')
        const startup = Buffer.concat([Buffer.from([0, 0, 0, body.length + 4]), body])
        const socket = connect(sqlPort, '127.0.0.1', () => socket.write(Buffer.concat([startup, Buffer.from('z\0\0\0\x04', 'latin1')])))
        const chunks: Buffer[] = []
        socket.on('data', (d) => chunks.push(d)).on('error', reject)
        setTimeout(() => { socket.destroy(); resolve(Buffer.concat(chunks)) }, 1000)
      })
      t.match(reply.toString('latin1'), /FATAL.*08P01.*not a PostgreSQL protocol 3\.0 message/, 'an unknown message type (which hangs PGlite) is refused')
      t.equal(await items(), 1)
      t.equal((await fetch(`${service.base}/health`)).status, 200)
    })

    t.test('SIGTERM: the SQL port closes with the service', async (t) => {
      const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)))
      service.child.kill('SIGTERM')
      t.equal(await exited, 0, 'a clean exit')
      await t.rejects(new Promise((resolve, reject) => {
        const socket = connect(sqlPort, '127.0.0.1', () => { socket.destroy(); resolve(undefined) }).on('error', reject)
      }), /ECONNREFUSED/, 'nothing listens any more')
    })
  })
}
