// Real clients with an API key, over a real socket, on both backends: GDAL's OAPIF driver
// (ogrinfo, ogr2ogr) with GDAL_HTTP_AUTH=BASIC and the key as GDAL_HTTP_USERPWD's password, and
// Debian's python3-requests-oauthlib obtaining a token by OAuth2 client credentials (HTTP Basic
// and form fields) and reading the items with it (oauth-client.py). A wrong key: 401 to both.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../helper.js'
import { run, seededService } from './seeded.js'

const PYTHON = '/usr/bin/python3'
const OAUTH_SCRIPT = fileURLToPath(new URL('./oauth-client.py', import.meta.url))
const ci = process.env.CI === 'true'
const hasGdal = spawnSync('ogrinfo', ['--version']).status === 0
const hasOauthlib = spawnSync(PYTHON, ['-c', 'import requests_oauthlib']).status === 0

const { service, key, keyId, boxes, inBbox } = await seededService(t)

t.test('GDAL with HTTP Basic and the key as the password', { skip: !hasGdal && !ci ? 'gdal-bin is not installed (apt-get install gdal-bin; .ci/run installs it)' : false }, async (t) => {
  const dir = await tempDir(t, 'sr-gdal-key-')
  const gdal = (cmd: string, args: string[], password = key) => run(cmd, args, { ...process.env, GDAL_HTTP_AUTH: 'BASIC', GDAL_HTTP_USERPWD: `gdal:${password}`, CPL_DEBUG: 'OFF' })
  const source = `OAPIF:${service.base}/`
  const info = await gdal('ogrinfo', ['-ro', '-al', '-so', source])
  t.equal(info.status, 0, info.stderr)
  t.match(info.stdout, new RegExp(`Feature Count: ${boxes.size}\\n`), 'the organisation\'s count')
  t.match(info.stdout, /Geometry: Polygon\n/)

  const out = join(dir, 'box.geojson')
  const copy = await gdal('ogr2ogr', ['-f', 'GeoJSON', out, source, 'sources', '-spat', '9.9', '9.9', '12.2', '11.2'])
  t.equal(copy.status, 0, copy.stderr)
  const fc = JSON.parse(await readFile(out, 'utf8')) as { features: Array<{ properties: { feature_id: string } }> }
  t.same(fc.features.map((f) => f.properties.feature_id).sort(), inBbox([9.9, 9.9, 12.2, 11.2]), '-spat: the sources the box intersects')

  const wrong = await gdal('ogrinfo', ['-ro', '-al', '-so', source], `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`)
  t.not(wrong.status, 0, 'a wrong key: GDAL cannot open the service')
  t.match(wrong.stderr, /HTTP error code : 401/)
})

t.test('requests-oauthlib: client credentials, then the items with the token', { skip: !hasOauthlib && !ci ? 'python3-requests-oauthlib is not installed (apt-get install python3-requests-oauthlib; .ci/run installs it)' : false }, async (t) => {
  // http on loopback: oauthlib insists on https otherwise.
  const r = await run(PYTHON, [OAUTH_SCRIPT], { ...process.env, SR_BASE: service.base, SR_CLIENT_ID: keyId, SR_CLIENT_SECRET: key, OAUTHLIB_INSECURE_TRANSPORT: '1' })
  t.equal(r.status, 0, r.stderr)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  for (const how of ['basic', 'form']) {
    const line = lines.find((l) => l.how === how)
    t.match(line, { token_type: 'Bearer', scope: ['read'], expires_in: 3600, status: 200, number_matched: boxes.size }, `${how}: a token, and the items read with it`)
    t.same(line?.feature_ids, [...boxes.keys()].sort(), `${how}: the organisation's sources`)
  }
  t.match(lines.find((l) => l.how === 'wrong secret'), { error: 'invalid_client', status: 401 }, 'a wrong secret: invalid_client')
})
