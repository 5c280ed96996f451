// QGIS 3.22 (Debian's python3-qgis and qgis-providers, headless) opens the `sources` layer over
// OGC API – Features with its "Basic" authentication method and a read API key as the password,
// stored in the auth database of a fresh profile under a master password (qgis-oapif.py): the
// layer is valid, counts the organisation's 55 polygons and no other's, and a bbox request (sent
// to the service as bbox=) gives the sources the box intersects. A wrong key: the service
// answers it only with 401s (its public documents aside) and no feature reaches QGIS; opened right
// after a good key in the same QGIS process, the wrong key gets no answer from QGIS's network
// cache either: the layer is invalid. Both backends: the service runs in its own process.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helper.js'
import { type Box, run, seededService } from './seeded.js'

const PYTHON = '/usr/bin/python3'
const SCRIPT = fileURLToPath(new URL('./qgis-oapif.py', import.meta.url))
// python3-qgis, and qgis-providers for its OAPIF (WFS) provider.
const hasQgis = spawnSync(PYTHON, ['-c', 'import qgis.core'], { env: { ...process.env, QT_QPA_PLATFORM: 'offscreen' } }).status === 0 &&
  existsSync('/usr/lib/qgis/plugins/libprovider_wfs.so')
if (!hasQgis && process.env.CI !== 'true') {
  t.plan(0, 'QGIS is not installed (apt-get install python3-qgis qgis-providers; .ci/run installs them)')
} else {
  await qgis()
}

interface Opened { valid: boolean, feature_count?: number, geometry?: string, in_bbox?: string[], all?: string[] }
interface QgisOutput extends Opened { qgis: string, auth_db: string, then?: Opened }

async function qgis (): Promise<void> {
  const { service, key, boxes, inBbox } = await seededService(t)
  const bbox: Box = [9.9, 9.9, 12.2, 11.2]
  async function open (t: Test, withKey: string, thenKey?: string): Promise<QgisOutput> {
    const profile = await tempDir(t, 'sr-qgis-')
    const r = await run(PYTHON, [SCRIPT, profile], { ...process.env, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: profile, SR_BASE: service.base, SR_KEY: withKey, SR_BBOX: bbox.join(','), ...(thenKey === undefined ? {} : { SR_THEN_KEY: thenKey }) })
    const line = r.stdout.trim().split('\n').pop() ?? ''
    if (r.status !== 0 || !line.startsWith('{')) throw new Error(`qgis-oapif.py exited ${r.status ?? r.signal}: ${r.stdout}\n${r.stderr}`)
    const out = JSON.parse(line) as QgisOutput
    t.ok(out.auth_db.startsWith(profile), 'the Basic configuration is in the profile\'s auth database')
    return out
  }

  t.test('the Basic method with a read key: the layer, its count, a bbox', async (t) => {
    const out = await open(t, key)
    t.comment(`QGIS printed: ${JSON.stringify({ ...out, all: `${out.all?.length ?? 0} feature ids` })}`)
    t.equal(out.valid, true, `QGIS ${out.qgis} opens the layer`)
    t.equal(out.feature_count, boxes.size, 'the organisation\'s sources counted')
    t.equal(out.geometry, 'Polygon')
    t.same(out.all, [...boxes.keys()].sort(), 'exactly the organisation\'s sources, none of another')
    const expected = inBbox(bbox)
    t.ok(expected.length > 0 && expected.length < boxes.size, `a proper subset (${expected.length})`)
    t.same(out.in_bbox, expected, 'the bbox request: the sources the box intersects')
    await service.waitFor(/"url":"\/collections\/sources\/items\?[^"]*bbox=9\.9/, 5000)
    t.pass('QGIS sent the bbox to the service (items?bbox=…)')
  })

  const wrongKey = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`

  t.test('a good key, then a wrong one in the same QGIS process: its network cache does not answer for the wrong one', async (t) => {
    const from = service.lines.length
    const out = await open(t, key, wrongKey)
    t.comment(`QGIS printed: ${JSON.stringify({ ...out, all: `${out.all?.length ?? 0} feature ids`, in_bbox: undefined })}`)
    t.equal(out.valid, true, 'the good key: valid')
    t.equal(out.feature_count, boxes.size)
    t.same(out.then?.all ?? [], [], 'the wrong key: no feature, from the service or from the cache')
    t.equal(out.then?.valid, false, 'the wrong key: the layer is invalid')
    // Authenticated answers are "Cache-Control: private, no-cache" with "Vary: Authorization": QGIS
    // asks the service again each time, which answers the wrong key with 401.
    await service.waitFor(/rejected: The API key is not valid/, 5000)
    t.ok(service.lines.slice(from).some((l) => /"statusCode":401/.test(l)), 'the service answered the wrong key 401')
  })

  t.test('a wrong key: 401, no feature reaches QGIS', async (t) => {
    const from = service.lines.length
    const out = await open(t, wrongKey)
    t.comment(`QGIS printed: ${JSON.stringify(out)}`)
    // What matters: the service answered nothing but its public documents to that key, and no
    // feature reached QGIS. (Whether 3.22's OAPIF provider then calls the layer invalid, or valid
    // and empty, has varied between runs; it is printed above, not asserted.)
    await service.waitFor(/rejected: The API key is not valid/, 5000)
    await new Promise((resolve) => setTimeout(resolve, 500)) // the log lines of QGIS's last requests
    const urls = new Map<string, string>()
    const answered: Array<[string, number]> = []
    for (const line of service.lines.slice(from)) {
      if (!line.startsWith('{')) continue
      const entry = JSON.parse(line) as { reqId?: string, req?: { url: string }, res?: { statusCode: number } }
      if (entry.reqId === undefined) continue
      if (entry.req !== undefined) urls.set(entry.reqId, entry.req.url)
      if (entry.res !== undefined) answered.push([urls.get(entry.reqId) ?? '?', entry.res.statusCode])
    }
    const PUBLIC = new Set(['/', '/conformance', '/openapi.json', '/api'])
    t.ok(answered.some(([url, status]) => url.startsWith('/collections/sources') && status === 401), 'the collection answered 401')
    t.same(answered.filter(([url, status]) => !PUBLIC.has(url.split('?')[0] as string) && status < 400), [], 'nothing but the public documents answered with a success')
    t.same(out.all ?? [], [], 'no feature reaches QGIS')
  })
}
