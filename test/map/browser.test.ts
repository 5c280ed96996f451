// The map page in a real browser: Debian's headless Chromium driven by puppeteer-core (no browser
// download), against the service in its own process on a throwaway database, MAP_TILE_URL=none.
// The sources are vector tiles drawn on canvas, so the tests look at the pixels where a source is
// (page.ts) and click there. Signs in (a wrong password shows the 401), sees its organisation's
// polygons and none of another's, through tile requests that carry its token; sees a conflict in
// its colour; reads a source's id and period in the panel (GET /sources/?id=), deletes as an
// editor (a viewer has no Delete); filters by period (the tiles' datetime); uploads a file with a
// bad polygon and sees the pointer, drops a file on the map and sees its area, shows a hostile
// feature id as text, creates and revokes an API key, works behind a path prefix, is signed out
// on a 401, and leaves a screenshot in test-output/map/.
/// <reference lib="dom" />
import t from 'tap'
import { type AddressInfo } from 'node:net'
import { createServer, request } from 'node:http'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig, tempDir } from '../helper.js'
import { CHROMIUM, NO_CHROMIUM, isBlue, isRed, pixelAt, waitForPixel } from './page.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): the test seeds two organisations beside the running service')
} else if (NO_CHROMIUM !== undefined) {
  t.plan(0, NO_CHROMIUM)
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
  const SIDE = 0.08
  const box = (x: number, y: number) => [[[x, y], [x + SIDE, y], [x + SIDE, y + SIDE], [x, y + SIDE], [x, y]]]
  // Where each box is: its lower-left corner, by feature id.
  const corners = new Map<string, [number, number]>()
  const placed = (id: string, x: number, y: number) => { corners.set(id, [x, y]); return box(x, y) }
  /** A point inside a source's box: its centre, or a fraction of the way across it. */
  const inside = (featureId: string, fx = 0.5, fy = 0.5): [number, number] => {
    const [x, y] = corners.get(featureId) as [number, number]
    return [x + SIDE * fx, y + SIDE * fy]
  }
  const HOSTILE = '<img src=x onerror=alert(1)>'
  // Org A: five boxes in a row and the hostile id; org B: three boxes between them.
  const mine = await post(await tokenOf(editor), [
    ...Array.from({ length: 5 }, (_, i) => {
      const f = feature(`a-${i}`, { coordinates: placed(`a-${i}`, 10 + i * 0.2, 50), start: '2024-03-01T00:00:00Z', end: '2024-09-01T00:00:00Z' }) as { properties: Record<string, unknown> }
      // Attributes, shown in the panel as sent (one hostile: text, never markup).
      f.properties = { ...f.properties, land_use: `forest-${i}`, owner: { name: HOSTILE } }
      return f
    }),
    feature(HOSTILE, { coordinates: placed(HOSTILE, 10, 50.2) })
  ])
  await post(await tokenOf(other), Array.from({ length: 3 }, (_, i) => feature(`b-${i}`, { coordinates: placed(`b-${i}`, 10.1 + i * 0.2, 50.1) })))
  // And one of org B over half of a-0, for part of its period: a conflict.
  const [claim] = await post(await tokenOf(other), [feature('b-claim', { coordinates: placed('b-claim', 10.04, 50) })])

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
  // Every tile request the page makes, with its Authorization header.
  const tileRequests: Array<{ url: string, authorization?: string }> = []
  page.on('request', (r) => { if (r.url().includes('/tiles/WebMercatorQuad/')) tileRequests.push({ url: r.url(), authorization: r.headers().authorization }) })

  /** Waits until the tiles in view are drawn, with these sources drawn and those not. */
  const waitForSources = async (drawn: string[], absent: string[] = []) => {
    for (const id of drawn) await waitForPixel(page, ...inside(id), true)
    for (const id of absent) await waitForPixel(page, ...inside(id), false)
  }
  const clickOn = async (featureId: string, fx?: number, fy?: number) => {
    const { x, y } = await pixelAt(page, ...inside(featureId, fx, fy))
    await page.mouse.click(x, y)
  }
  const AS = ['a-0', 'a-1', 'a-2', 'a-3', 'a-4', HOSTILE]
  const BS = ['b-0', 'b-1', 'b-2']
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

  t.test('signed in: the organisation\'s polygons, none of another\'s, from tiles that carry the token', async (t) => {
    await signIn(editor)
    await waitForSources(AS, BS)
    t.pass('each of its six sources is drawn; none of the other organisation\'s three')
    t.ok(tileRequests.length > 0, `${tileRequests.length} tile requests`)
    t.ok(tileRequests.every((r) => /^Bearer eyJ/.test(r.authorization ?? '')), 'each with the bearer token')
    t.ok(tileRequests.every((r) => !r.url.includes('datetime')), 'no period filter yet')
    t.equal(await page.evaluate(() => sessionStorage.length), 1, 'the token is in sessionStorage')
    t.equal(await page.evaluate(() => localStorage.length + document.cookie.length), 0, 'and nowhere else')
    t.notMatch(page.url(), /token|eyJ/, 'nor in the URL')
  })

  t.test('a source in conflict: drawn in the conflict colour; the panel names the other source by id only', async (t) => {
    const contested = (await pixelAt(page, ...inside('a-0', 0.25))).rgba
    t.ok(isRed(contested), `a-0 is red (${String(contested)})`)
    const other = (await pixelAt(page, ...inside('a-1'))).rgba
    t.ok(isBlue(other), `the others are not (${String(other)})`)
    const read = page.waitForResponse((r) => r.url().includes('/sources/?id='))
    await clickOn('a-0', 0.25)
    t.equal((await read).status(), 200, 'the details come from GET /sources/?id=')
    await page.waitForSelector('#panel:not([hidden])')
    const listed = await text('#conflicts')
    t.match(listed, claim?.id as string)
    t.match(listed, /50 %/)
    t.notMatch(listed, /b-claim/, 'not its feature id')
    await page.click('#panel-close')
  })

  t.test('click a polygon: its id and period in the panel; delete it as an editor', async (t) => {
    const target = mine.find((s) => s.feature_id === 'a-2') as { id: string }
    await clickOn('a-2')
    await page.waitForFunction((id) => document.querySelector('#details')?.textContent?.includes(id), {}, target.id)
    const details = await text('#details')
    t.match(details, target.id)
    t.match(details, '2024-03-01T00:00:00Z – 2024-09-01T00:00:00Z')
    t.match(details, 'land_useforest-2', 'its attributes')
    t.match(details, `owner{"name":"${HOSTILE}"}`, 'nested, as JSON text')
    t.ok(await page.$('#delete:not([hidden])'), 'an editor has Delete')
    await page.click('#delete')
    await waitForSources(['a-1', 'a-3'], ['a-2'])
    t.pass('no longer drawn; its neighbours still are')
    t.match(dialogs.at(-1), /^confirm: Delete source src_/, 'asked first')
    t.equal((await fetch(`${service.base}/sources/?id=${target.id}`, { headers: { authorization: `Bearer ${await tokenOf(editor)}` } })).status, 410, 'gone from the service (410 for its owner)')
  })

  t.test('a hostile feature id is shown as text', async (t) => {
    const hostile = mine.find((s) => s.feature_id === HOSTILE) as { id: string }
    await clickOn(HOSTILE)
    await page.waitForFunction((id) => document.querySelector('#details')?.textContent?.includes(id), {}, hostile.id)
    t.match(await text('#details'), HOSTILE)
    t.equal(await page.$$eval('#panel img, #message img', (imgs) => imgs.length), 0, 'no element made from it')
    t.same(dialogs.filter((d) => d.startsWith('alert')), [], 'no script ran')
  })

  t.test('the period filter applies to the tiles (datetime)', async (t) => {
    await page.click('#panel-close')
    const before = tileRequests.length
    await page.$eval('#from', (el) => { (el as HTMLInputElement).value = '2024-10-01' })
    await page.$eval('#to', (el) => { (el as HTMLInputElement).value = '2024-11-01' })
    await page.click('#filter button[type=submit]')
    await waitForSources([HOSTILE], ['a-0', 'a-1'])
    t.pass('a-* (March to September) are not drawn; the hostile one (all 2024) is')
    const filtered = tileRequests.slice(before).filter((r) => r.url.includes('/collections/sources/')) // the conflicts' tiles take no period
    t.ok(filtered.length > 0 && filtered.every((r) => new URL(r.url).searchParams.get('datetime') === '2024-10-01T00:00:00Z/2024-11-01T00:00:00Z'), 'the tiles asked with datetime')
    t.match(page.url(), /from=2024-10-01&to=2024-11-01/, 'the hash keeps the filter')
    await page.click('#clear-filter')
    await waitForSources(['a-0', 'a-1', HOSTILE])
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

  t.test('upload a file whose features have no id: pick the attribute (id_property); each refused feature\'s reason', async (t) => {
    const dir = await tempDir(t, 'sr-map-ids-')
    const file = join(dir, 'parcels.geojson')
    const parcel = (no: string, coordinates: unknown) => ({ type: 'Feature', properties: { name: `parcel ${no}`, parcel_no: no, start_at: '2024-01-01', end_at: '2025-01-01' }, geometry: { type: 'MultiPolygon', coordinates } })
    await writeFile(file, JSON.stringify(collection(
      parcel('P-1', [box(11.6, 50), box(11.75, 50)]),
      parcel('P-2', [[[[11.9, 50], [12, 50.1], [12, 50], [11.9, 50.1], [11.9, 50]]]])
    )))
    const input = await page.$('#upload')
    if (input === null) throw new Error('no file input')
    await (input as unknown as { uploadFile: (path: string) => Promise<void> }).uploadFile(file)
    await page.waitForFunction(() => document.querySelector('#id-pick')?.hasAttribute('hidden') === false, { timeout: 15_000 })
    t.match(await text('#message-text'), /2 of 2 features have no id/)
    t.same(await page.$$eval('#id-property option', (options) => options.map((o) => (o as HTMLOptionElement).value)), ['name', 'parcel_no'], 'the file\'s attribute names')
    t.equal(await page.$eval('#id-property', (s) => (s as HTMLSelectElement).value), 'parcel_no', 'parcel_no guessed')
    await page.click('#id-upload')
    await page.waitForFunction(() => document.querySelector('#message-text')?.textContent?.includes('was not registered'), { timeout: 15_000 })
    t.match(await text('#message-details'), /Feature 1 \(P-2\): invalid multipolygon: Self-intersection.*\(\/features\/1\/geometry\/coordinates\/0\/0\)/, 'the refused feature, its id and its reason')
  })

  t.test('drop a GeoJSON file on the map: the created ids, the areas drawn and in view', async (t) => {
    // Away from where the previous upload left the view (its refused parcel, 11.9° E): the page
    // brings what it created into view.
    const dropped = JSON.stringify(collection(feature('dropped-1', { coordinates: placed('dropped-1', 11.41, 50.01) })))
    t.notOk((await pixelAt(page, ...inside('dropped-1'))).inView, 'not in view before the drop')
    await page.evaluate((text) => {
      const data = new DataTransfer()
      data.items.add(new File([text], 'dropped.geojson', { type: 'application/geo+json' }))
      document.querySelector('#map')?.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }))
    }, dropped)
    await page.waitForFunction(() => document.querySelector('#message-text')?.textContent?.includes('created'), { timeout: 15_000 })
    t.match(await text('#message-text'), 'dropped.geojson: Source created.')
    t.match(await text('#message-details'), /src_\w+ \(dropped-1\)/)
    const id = /src_\w+/.exec(await text('#message-details'))?.[0] as string
    await waitForSources(['dropped-1'])
    mine.push({ id, feature_id: 'dropped-1' })
    await clickOn('dropped-1')
    await page.waitForFunction((id) => document.querySelector('#details')?.textContent?.includes(id), {}, id)
    t.pass('drawn, and its details open on a click')
  })

  t.test('a viewer sees no Delete', async (t) => {
    await page.click('#sign-out')
    await signIn(viewer)
    await waitForSources(['a-1', 'a-3'])
    await clickOn('a-1')
    await page.waitForFunction((id) => document.querySelector('#details')?.textContent?.includes(id), {}, mine.find((s) => s.feature_id === 'a-1')?.id as string)
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
    // The items as HTML: the page for people (issue 48), signed in there, its data read under the prefix.
    const bbox = '10.15,49.95,10.7,50.05'
    await page.goto(`${prefixed}/collections/sources/items?f=html&bbox=${bbox}`)
    await page.waitForSelector('#sign-in-form')
    await page.type('#email', editor.email)
    await page.type('#password', editor.password)
    await page.click('#sign-in-form button[type=submit]')
    await page.waitForSelector('#features tbody tr')
    t.same((await page.$$eval('#features tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent))).sort(), ['a-1', 'a-3'], 'items as HTML under the prefix: the sources in the bbox')
    t.equal(await page.$eval('header a[href$="map"]', (a) => (a as HTMLAnchorElement).href), `${prefixed}/map`, 'its link to the map stays under the prefix')
    // The map page, in the same tab's session, with that box as its first view.
    const before = tileRequests.length
    await page.goto(`${prefixed}/map?bbox=${bbox}`)
    await waitForSources(['a-1', 'a-3'])
    t.ok(tileRequests.slice(before).some((r) => r.url.startsWith(`${prefixed}/collections/sources/tiles/WebMercatorQuad/`)), 'tiles asked under the prefix')
    await page.click('#sign-out')
  })

  t.test('no errors in the page (CSP included), and a screenshot', async (t) => {
    await signIn(editor)
    await waitForSources(['a-1', 'a-3', 'dropped-1'])
    await page.screenshot({ path: 'test-output/map/map.png' })
    t.same(problems, [])
  })
}
