// The map page in a real browser: Debian's headless Chromium driven by puppeteer-core (no browser
// download), against the service in its own process on a throwaway database, MAP_TILE_URL=none.
// Signs in (a wrong password shows the 401), sees exactly its organisation's polygons, reads a
// source's id and period in the panel, deletes as an editor (a viewer has no Delete), uploads a
// file with a bad polygon and sees the pointer, drops a file on the map and sees its area, shows
// a hostile feature id as text, creates and revokes an API key, works behind a path prefix, is
// signed out on a 401, and leaves
// a screenshot in test-output/map/.
/// <reference lib="dom" />
import t from 'tap'
import { existsSync } from 'node:fs'
import { type AddressInfo } from 'node:net'
import { createServer, request } from 'node:http'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig, tempDir } from '../helper.js'

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p !== undefined && existsSync(p))
if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): the test seeds two organisations beside the running service')
} else if (CHROMIUM === undefined && process.env.CI !== 'true') {
  t.plan(0, 'chromium is not installed (apt-get install chromium; .ci/run installs it)')
} else {
  await inBrowser(CHROMIUM ?? '/usr/bin/chromium')
}

async function inBrowser (executablePath: string): Promise<void> {
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const viewer = await addAccount(db, { role: 'viewer', organisation: 'org-a' })
  const other = await addAccount(db, { role: 'editor', organisation: 'org-b' })
  await db.destroy()
  const service = await startService(t, target, { MAP_TILE_URL: 'none' })

  const tokenOf = async (account: { email: string, password: string }) => ((await (await fetch(`${service.base}/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: account.email, password: account.password })
  })).json()) as { token: string }).token
  const post = async (token: string, features: unknown[]) => {
    const res = await fetch(`${service.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(...features)) })
    if (res.status !== 201) throw new Error(`seeding: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { sources: Array<{ id: string, feature_id: string }> }).sources
  }
  const box = (x: number, y: number) => [[[x, y], [x + 0.08, y], [x + 0.08, y + 0.08], [x, y + 0.08], [x, y]]]
  const HOSTILE = '<img src=x onerror=alert(1)>'
  // Org A: five boxes in a row and the hostile id; org B: three boxes between them.
  const mine = await post(await tokenOf(editor), [
    ...Array.from({ length: 5 }, (_, i) => feature(`a-${i}`, { coordinates: box(10 + i * 0.2, 50), start: '2024-03-01T00:00:00Z', end: '2024-09-01T00:00:00Z' })),
    feature(HOSTILE, { coordinates: box(10, 50.2) })
  ])
  await post(await tokenOf(other), Array.from({ length: 3 }, (_, i) => feature(`b-${i}`, { coordinates: box(10.1 + i * 0.2, 50.1) })))
  // And one of org B over half of a-0, for part of its period: a conflict.
  const [claim] = await post(await tokenOf(other), [feature('b-claim', { coordinates: box(10.04, 50) })])

  const browser: Browser = await puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  const page: Page = await browser.newPage()
  await page.setViewport({ width: 1000, height: 700 })
  const problems: string[] = []
  const dialogs: string[] = []
  page.on('pageerror', (err) => problems.push(`page error: ${(err as Error).message}`))
  // Chromium logs every 4xx answer as "Failed to load resource": those are the answers under
  // test. Anything else (a CSP violation, a script error) is a problem.
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`) })
  page.on('dialog', (d) => { dialogs.push(`${d.type()}: ${d.message()}`); void (d.type() === 'confirm' ? d.accept() : d.dismiss()) })

  const paths = () => page.$$eval('path.leaflet-interactive', (ps) => ps.map((p) => p.getAttribute('data-source-id')))
  // The page marks #map with data-loading while a load is due or running.
  const waitForPaths = async (n: number) => {
    try {
      await page.waitForFunction((n) => !document.querySelector('#map[data-loading]') && document.querySelectorAll('path.leaflet-interactive').length === n, { timeout: 15_000 }, n)
    } catch (err) {
      throw new Error(`expected ${n} polygons, the page shows ${(await paths()).length}: ${(err as Error).message}`)
    }
  }
  const text = (selector: string) => page.$eval(selector, (el) => el.textContent ?? '')
  async function signIn (account: { email: string, password: string }): Promise<void> {
    await page.goto(`${service.base}/map`)
    await page.waitForSelector('#sign-in:not([hidden])')
    await page.type('#email', account.email)
    await page.type('#password', account.password)
    await page.click('#sign-in-form button[type=submit]')
  }

  t.test('a wrong password shows the service\'s 401', async (t) => {
    await signIn({ email: editor.email, password: 'not the password at all' })
    await page.waitForSelector('#message:not([hidden])')
    t.match(await text('#message-text'), /Sign-in failed: .+ \(401\)/)
    t.ok(await page.$('#workspace[hidden]'), 'still signed out')
  })

  t.test('signed in: exactly the organisation\'s polygons, none of another', async (t) => {
    await signIn(editor)
    await waitForPaths(mine.length)
    t.same((await paths()).sort(), mine.map((s) => s.id).sort())
    t.equal(await page.evaluate(() => sessionStorage.length), 1, 'the token is in sessionStorage')
    t.equal(await page.evaluate(() => localStorage.length + document.cookie.length), 0, 'and nowhere else')
    t.notMatch(page.url(), /token|eyJ/, 'nor in the URL')
  })

  t.test('a source in conflict: drawn in the conflict colour; the panel names the other source by id only', async (t) => {
    const contested = mine.find((s) => s.feature_id === 'a-0') as { id: string }
    const fill = (id: string) => page.$eval(`path[data-source-id="${id}"]`, (p) => p.getAttribute('fill'))
    t.equal(await fill(contested.id), '#b3261e')
    t.not(await fill((mine.find((s) => s.feature_id === 'a-1') as { id: string }).id), '#b3261e', 'the others are not')
    await page.click(`path[data-source-id="${contested.id}"]`)
    await page.waitForSelector('#panel:not([hidden])')
    const listed = await text('#conflicts')
    t.match(listed, claim?.id as string)
    t.match(listed, /50 %/)
    t.notMatch(listed, /b-claim/, 'not its feature id')
    await page.click('#panel-close')
  })

  t.test('click a polygon: its id and period in the panel; delete it as an editor', async (t) => {
    const target = mine.find((s) => s.feature_id === 'a-2') as { id: string }
    await page.click(`path[data-source-id="${target.id}"]`)
    await page.waitForSelector('#panel:not([hidden])')
    const details = await text('#details')
    t.match(details, target.id)
    t.match(details, '2024-03-01T00:00:00Z – 2024-09-01T00:00:00Z')
    t.ok(await page.$('#delete:not([hidden])'), 'an editor has Delete')
    await page.click('#delete')
    await waitForPaths(mine.length - 1)
    t.notOk((await paths()).includes(target.id))
    t.match(dialogs.at(-1), /^confirm: Delete source src_/, 'asked first')
    t.equal((await fetch(`${service.base}/sources/?id=${target.id}`, { headers: { authorization: `Bearer ${await tokenOf(editor)}` } })).status, 404, 'gone from the service')
  })

  t.test('a hostile feature id is shown as text', async (t) => {
    const hostile = mine.find((s) => s.feature_id === HOSTILE) as { id: string }
    await page.click(`path[data-source-id="${hostile.id}"]`)
    await page.waitForFunction((id) => document.querySelector('#details')?.textContent?.includes(id), {}, hostile.id)
    t.match(await text('#details'), HOSTILE)
    t.equal(await page.$$eval('#panel img, #message img', (imgs) => imgs.length), 0, 'no element made from it')
    t.same(dialogs.filter((d) => d.startsWith('alert')), [], 'no script ran')
  })

  t.test('upload a file with one bad polygon: the pointer in the message, the feature outlined', async (t) => {
    const dir = await tempDir(t, 'sr-map-')
    const file = join(dir, 'areas.geojson')
    await writeFile(file, JSON.stringify(collection(
      feature('upload-ok', { coordinates: box(11.2, 50) }),
      feature('upload-bowtie', { coordinates: [[[11.4, 50], [11.5, 50.1], [11.5, 50], [11.4, 50.1], [11.4, 50]]] })
    )))
    const input = await page.$('#upload')
    if (input === null) throw new Error('no file input')
    await (input as unknown as { uploadFile: (path: string) => Promise<void> }).uploadFile(file)
    await page.waitForFunction(() => document.querySelector('#message-text')?.textContent?.includes('was not registered'), { timeout: 15_000 })
    t.match(await text('#message-details'), /\/features\/1\/geometry/)
    t.ok(await page.$('path.sr-rejected'), 'the rejected polygon is drawn')
    await mkdir('test-output/map', { recursive: true })
    await page.screenshot({ path: 'test-output/map/upload-rejected.png' })
  })

  t.test('drop a GeoJSON file on the map: the created ids, the areas drawn', async (t) => {
    const dropped = JSON.stringify(collection(feature('dropped-1', { coordinates: box(11.41, 50.01) })))
    await page.evaluate((text) => {
      const data = new DataTransfer()
      data.items.add(new File([text], 'dropped.geojson', { type: 'application/geo+json' }))
      document.querySelector('#map')?.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }))
    }, dropped)
    await page.waitForFunction(() => document.querySelector('#message-text')?.textContent?.includes('created'), { timeout: 15_000 })
    t.match(await text('#message-text'), 'dropped.geojson: Source created.')
    t.match(await text('#message-details'), /src_\w+ \(dropped-1\)/)
    const id = /src_\w+/.exec(await text('#message-details'))?.[0] as string
    await page.waitForFunction((id) => !document.querySelector('#map[data-loading]') && document.querySelector(`path[data-source-id="${id}"]`) !== null, { timeout: 15_000 }, id)
    mine.push({ id, feature_id: 'dropped-1' })
  })

  t.test('a viewer sees no Delete', async (t) => {
    await page.click('#sign-out')
    await signIn(viewer)
    await waitForPaths(mine.length - 1)
    const any = (await paths())[0] as string
    await page.click(`path[data-source-id="${any}"]`)
    await page.waitForSelector('#panel:not([hidden])')
    t.ok(await page.$('#delete[hidden]'), 'no Delete button')
  })

  t.test('API keys: create one (shown once), it works in HTTP Basic; revoke it, it stops', async (t) => {
    const listed = page.waitForResponse((r) => r.url().includes('/api-keys?account_id='))
    await page.click('#keys-open')
    await page.waitForSelector('#keys:not([hidden])')
    t.equal((await listed).request().headers()['x-requested-with'], 'XMLHttpRequest', 'the page\'s requests say so: a 401 then offers no Basic dialog')
    await page.type('#key-name', 'browser key')
    await page.select('#key-scope', 'read')
    await page.click('#key-form button[type=submit]')
    await page.waitForFunction(() => /^srk_/.test((document.querySelector('#key-value') as HTMLInputElement).value))
    const key = await page.$eval('#key-value', (el) => (el as HTMLInputElement).value)
    t.match(key, /^srk_[0-9A-Za-z]{22}_[0-9A-Za-z]{43}$/, 'the new key, shown once')
    const id = key.slice(4, 26)
    await page.waitForSelector(`#key-list li[data-key-id="${id}"]`)
    t.match(await text(`#key-list li[data-key-id="${id}"]`), /browser key \(read\).*never used/, 'listed, without its secret')
    t.notMatch(await text('#key-list'), key.slice(27))
    const withKey = () => fetch(`${service.base}/collections`, { headers: { authorization: `Basic ${Buffer.from(`me:${key}`).toString('base64')}` } })
    t.equal((await withKey()).status, 200, 'the key works')
    await page.click(`#key-list li[data-key-id="${id}"] button`)
    await page.waitForSelector(`#key-list li[data-key-id="${id}"]`, { hidden: true })
    t.match(dialogs.at(-1), /^confirm: Revoke the key "browser key"/)
    t.equal((await withKey()).status, 401, 'revoked: refused')
    t.equal(await page.$eval('#key-value', (el) => (el as HTMLInputElement).value), '', 'the revoked key is no longer shown')
    await page.screenshot({ path: 'test-output/map/keys.png' })
    await page.click('#keys-close')
  })

  t.test('a request answered 401 signs out and says why', async (t) => {
    await page.evaluate(() => {
      const key = 'source-registry-token'
      const s = JSON.parse(sessionStorage.getItem(key) ?? '{}') as { token: string }
      sessionStorage.setItem(key, JSON.stringify({ ...s, token: `${s.token}x` }))
    })
    await page.reload()
    await page.waitForSelector('#sign-in:not([hidden])')
    t.match(await text('#message-text'), /Signed out: .+\(401\)/)
    t.equal(await page.evaluate(() => sessionStorage.length), 0, 'the token is gone')
  })

  t.test('behind a path prefix (a proxy serving the service under /registry/)', async (t) => {
    const upstream = new URL(service.base)
    const proxy = createServer((req, res) => {
      if (!req.url?.startsWith('/registry/')) { res.writeHead(404).end(); return }
      const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url.slice('/registry'.length), headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.pipe(res)
      })
      req.pipe(forward)
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { proxy.close() })
    const prefixed = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/registry`
    await page.goto(`${prefixed}/collections/sources/items?f=html&bbox=9.9,49.9,11.6,50.4`)
    t.equal(page.url(), `${prefixed}/map?bbox=9.9%2C49.9%2C11.6%2C50.4`, 'items as HTML: the map page, under the prefix, with the query')
    await page.type('#email', editor.email)
    await page.type('#password', editor.password)
    await page.click('#sign-in-form button[type=submit]')
    await waitForPaths(mine.length - 1)
    await page.click('#sign-out')
  })

  t.test('no errors in the page (CSP included), and a screenshot', async (t) => {
    await signIn(editor)
    await waitForPaths(mine.length - 1)
    await page.screenshot({ path: 'test-output/map/map.png' })
    t.same(problems, [])
  })
}
