// The pages for people (f=html) in a real browser (Debian's headless Chromium, puppeteer-core):
// opened from the address bar without a session they offer the sign-in; signed in (here, or on
// the map page in the same tab) they show the items as a table and on a small map, and one item's
// properties; no CSP violation is reported.
/// <reference lib="dom" />
import t from 'tap'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig } from '../helper.js'
import { CHROMIUM, NO_CHROMIUM } from './page.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): the service runs in its own process')
} else if (NO_CHROMIUM !== undefined) {
  t.plan(0, NO_CHROMIUM)
} else {
  await pages(CHROMIUM ?? '/usr/bin/chromium')
}

async function pages (executablePath: string): Promise<void> {
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  await db.destroy()
  const service = await startService(t, target, { MAP_TILE_URL: 'none' })
  const token = ((await (await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: editor.email, password: editor.password }) })).json()) as { token: string }).token
  const res = await fetch(`${service.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature('site-1'), feature('site-2', { coordinates: [[[12, 50], [13, 50], [13, 51], [12, 51], [12, 50]]] }))) })
  t.equal(res.status, 201)

  await t.test('the pages, signed out then in', async (t) => {
  const browser: Browser = await puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  const page: Page = await browser.newPage()
  const violations: string[] = []
  page.on('console', (m) => { if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text()) })

  await page.goto(`${service.base}/collections/sources/items?f=html`)
  await page.waitForSelector('#sign-in-form')
  t.pass('without a session: the sign-in is offered')
  await page.type('#email', editor.email)
  await page.type('#password', editor.password)
  await page.click('#sign-in-form button[type=submit]')
  await page.waitForSelector('#features tbody tr')
  const ids = await page.$$eval('#features tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent))
  t.same(ids.sort(), ['site-1', 'site-2'], 'the table shows the items (feature_id column)')
  t.equal(await page.$$eval('#small-map path.leaflet-interactive', (p) => p.length), 2, 'both on the small map')
  t.ok(await page.$('button[data-format=fgb]'), 'a download button for FlatGeobuf')

  // The same tab keeps the session (sessionStorage): the item's page shows its properties.
  await page.click('#features tbody tr a')
  await page.waitForSelector('#properties')
  const names = await page.$$eval('#properties th', (ths) => ths.map((th) => th.textContent))
  t.ok(names.includes('feature_id') && names.includes('start_at'), 'the item\'s properties')
  await page.goto(`${service.base}/?f=html`)
  await page.waitForSelector('main ul li a')
  t.match(await page.$eval('main', (m) => m.textContent), /OpenAPI/, 'the landing page, its links')
  await page.goto(`${service.base}/collections`, { waitUntil: 'load' })
  await page.waitForSelector('main h3')
  t.match(await page.$eval('main', (m) => m.textContent), /Sources/, 'a browser\'s Accept gives the page')
  t.same(violations, [], 'no CSP violation')
  })
}
