// /map/ in a real browser (Debian's headless Chromium through puppeteer-core): the address with a
// trailing slash ends on /map, with its query, where the page's relative links (map/static/…,
// map/leaflet/…) resolve: every asset loads, Leaflet runs, and signing in works. Both backends:
// the service runs in its own process.
/// <reference lib="dom" />
import t from 'tap'
import puppeteer from 'puppeteer-core'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, createDatabase, startService, targetConfig } from '../helper.js'
import { CHROMIUM, NO_CHROMIUM } from './page.js'

if (NO_CHROMIUM !== undefined) {
  t.plan(0, NO_CHROMIUM)
} else {
  await inBrowser(CHROMIUM ?? '/usr/bin/chromium')
}

async function inBrowser (executablePath: string): Promise<void> {
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  await db.destroy()
  const service = await startService(t, target, { MAP_TILE_URL: 'none' })

  const browser = await puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(`page error: ${(err as Error).message}`))
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`) })
  const answers: Array<[string, number]> = []
  page.on('response', (r) => answers.push([r.url().slice(service.base.length), r.status()]))

  t.test('opening /map/ ends on a working /map', async (t) => {
    await page.goto(`${service.base}/map/?datetime=2024-01-01T00:00:00Z/..`, { waitUntil: 'networkidle0' })
    t.equal(page.url(), `${service.base}/map?datetime=2024-01-01T00:00:00Z/..`, 'ends on /map, the query kept')
    t.match(answers[0], ['/map/?datetime=2024-01-01T00:00:00Z/..', 308], 'a 308 from /map/')
    const assets = answers.slice(1).map(([url]) => url)
    for (const asset of ['/map/leaflet/leaflet.css', '/map/static/map.css', '/map/leaflet/leaflet.js', '/map/static/map.js']) {
      t.ok(assets.includes(asset), `${asset} requested where it is`)
    }
    t.same(answers.filter(([url, status]) => url.startsWith('/map/map/') || status >= 400), [], 'nothing under /map/map/, no error')
    t.equal(await page.evaluate(() => typeof (window as unknown as { L?: unknown }).L), 'object', 'Leaflet runs')

    await page.waitForSelector('#sign-in:not([hidden])')
    await page.type('#email', editor.email)
    await page.type('#password', editor.password)
    await page.click('#sign-in-form button[type=submit]')
    await page.waitForSelector('#workspace:not([hidden])')
    t.pass('signed in: the workspace shows')
    t.same(problems, [], 'no script error, no CSP violation')
  })
}
