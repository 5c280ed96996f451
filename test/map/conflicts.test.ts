// The map page's conflicts (issue 47, point 7) in headless Chromium (puppeteer-core, as
// browser.test.ts): an overlap drawn in the colour of its state, a click on it opens the
// conflict's panel with both parties' stances; acknowledging (If-Match) turns it to in_review and
// redraws it in that colour; a note is added and read back; a carve-out is previewed (dry run)
// and confirmed, and the overlap is gone.
/// <reference lib="dom" />
import t from 'tap'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, startService, targetConfig } from '../helper.js'
import { CHROMIUM, NO_CHROMIUM, pixelAt } from './page.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only (as browser.test.ts): the test seeds two organisations beside the running service')
} else if (NO_CHROMIUM !== undefined) {
  t.plan(0, NO_CHROMIUM)
} else {
  await inBrowser(CHROMIUM ?? '/usr/bin/chromium')
}

async function inBrowser (executablePath: string): Promise<void> {
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const other = await addAccount(db, { role: 'editor', organisation: 'org-b' })
  await db.destroy()
  const service = await startService(t, target, { MAP_TILE_URL: 'none' })
  const tokenOf = async (account: { email: string, password: string }) => ((await (await fetch(`${service.base}/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: account.email, password: account.password })
  })).json()) as { token: string }).token
  const post = async (token: string, coordinates: number[][][]) => {
    const res = await fetch(`${service.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(collection(feature(`f-${Math.random()}`, { coordinates }))) })
    if (res.status !== 201) throw new Error(`seeding: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { sources: Array<{ id: string }> }).sources[0]?.id as string
  }
  const box = (x: number, y: number, w: number, h: number) => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]
  // a's source 10.00–10.10, b's 10.06–10.16: the overlap 10.06–10.10.
  const mine = await post(await tokenOf(editor), box(10, 50, 0.1, 0.1))
  await post(await tokenOf(other), box(10.06, 50, 0.1, 0.1))
  const OVERLAP: [number, number] = [10.08, 50.05]
  const OUTSIDE: [number, number] = [10.03, 50.05]

  const browser: Browser = await puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  const page: Page = await browser.newPage()
  await page.setViewport({ width: 1000, height: 700 })
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(`page error: ${(err as Error).message}`))
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`) })
  const text = (selector: string) => page.$eval(selector, (el) => el.textContent ?? '')
  /** Waits until the conflicts pane has a colour at the point that passes `ok`. */
  const waitForConflictColour = async (ok: (rgba: number[] | null) => boolean, what: string) => {
    const deadline = Date.now() + 15_000
    for (;;) {
      const { rgba } = await pixelAt(page, ...OVERLAP, 0, 'conflicts')
      if (ok(rgba)) return rgba
      if (Date.now() > deadline) throw new Error(`the overlap is not ${what}: ${String(rgba)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  // open #d62828, in_review #f77f00
  const isOpen = (c: number[] | null) => c !== null && (c[0] as number) > 150 && (c[1] as number) < 80
  const isInReview = (c: number[] | null) => c !== null && (c[0] as number) > 150 && (c[1] as number) > 90 && (c[2] as number) < 60

  await page.goto(`${service.base}/map#map=12/50.05/10.08`)
  await page.waitForSelector('#sign-in:not([hidden])')
  await page.type('#email', editor.email)
  await page.type('#password', editor.password)
  await page.click('#sign-in-form button[type=submit]')

  t.test('the overlap in the colour of its state; outside it, none', async (t) => {
    t.ok(isOpen(await waitForConflictColour(isOpen, 'open-red')), 'open')
    t.equal((await pixelAt(page, ...OUTSIDE, 0, 'conflicts')).rgba, null, 'the rest of the source is not a conflict')
    t.match(await text('.legend'), /Conflict: open[\s\S]*Conflict: in review[\s\S]*Conflict: disputed[\s\S]*Conflict: accepted/)
  })

  t.test('click it: the panel with both stances; acknowledge; the colour follows', async (t) => {
    const { x, y } = await pixelAt(page, ...OVERLAP)
    await page.mouse.click(x, y)
    await page.waitForSelector('#conflict-panel:not([hidden])')
    t.match(await text('#conflict-parties'), new RegExp(`Yours: ${mine} — open`))
    t.match(await text('#conflict-parties'), /Other party: src_\w+ — open/)
    t.equal(await page.$eval('#stance-disputed', (b) => (b as HTMLButtonElement).disabled), true, 'from open only acknowledged')
    const stance = page.waitForResponse((r) => r.url().includes('/stance'))
    await page.click('#stance-acknowledged')
    const res = await stance
    t.equal(res.status(), 200)
    t.equal(res.request().headers()['if-match'], 'W/"1"', 'sent with If-Match')
    await page.waitForFunction(() => /in_review/.test(document.getElementById('conflict-details')?.textContent ?? ''))
    t.match(await text('#conflict-parties'), /Yours: .* — acknowledged/)
    t.ok(isInReview(await waitForConflictColour(isInReview, 'in-review orange')), 'redrawn in review')
  })

  t.test('dispute needs a reason; a note is added and read back', async (t) => {
    await page.type('#dispute-reason', 'we hold the title since 1998')
    const stance = page.waitForResponse((r) => r.url().includes('/stance'))
    await page.click('#stance-disputed')
    t.equal((await stance).status(), 200)
    await page.waitForFunction(() => /disputed/.test(document.getElementById('conflict-details')?.textContent ?? ''))
    t.match(await text('#conflict-parties'), /disputed \(“we hold the title since 1998”\)/)
    await page.type('#note-body', 'Survey attached <b>not bold</b>')
    const note = page.waitForResponse((r) => r.url().includes('/notes') && r.request().method() === 'POST')
    await page.click('#note-form button[type=submit]')
    t.equal((await note).status(), 201)
    await page.waitForFunction(() => /Survey attached/.test(document.getElementById('conflict-notes')?.textContent ?? ''))
    t.match(await text('#conflict-notes'), /Survey attached <b>not bold<\/b>/, 'shown as text')
  })

  t.test('carve it out: the dry run says what is given up; confirmed, the overlap is gone', async (t) => {
    const dry = page.waitForResponse((r) => r.url().includes('dry_run=true'))
    await page.click('#carve-preview')
    t.equal((await dry).status(), 200)
    await page.waitForSelector('#carve-summary:not([hidden])')
    t.match(await text('#carve-summary'), /gives up 0\.\d+|gives up \d/)
    const carve = page.waitForResponse((r) => r.url().includes('/sources/carve') && !r.url().includes('dry_run'))
    await page.click('#carve-confirm')
    const res = await carve
    t.equal(res.status(), 200)
    t.equal(res.request().headers()['if-match'], 'W/"1"')
    await waitForConflictColour((c) => c === null, 'gone')
    t.ok(await page.$('#conflict-panel[hidden]'))
    t.same(problems, [])
  })
}
