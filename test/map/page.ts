// The map page in Chromium as the tests read it. The sources are drawn on canvas (vector tiles),
// so a test asks what is drawn at a place: where (lon, lat) is on the screen, from the view the
// page keeps in its URL hash (#map=z/lat/lon) and Leaflet's own projection, and the colour the
// source tiles' canvases have there.
/// <reference lib="dom" />
import { existsSync } from 'node:fs'
import type { Page } from 'puppeteer-core'

/** Debian's Chromium (or CHROMIUM_PATH); undefined when missing, which skips a browser test outside CI. */
export const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p !== undefined && existsSync(p))
/** Why a browser test does not run here, or undefined when it must (CI installs Chromium and requires it). */
export const NO_CHROMIUM = CHROMIUM === undefined && process.env.CI !== 'true' ? 'chromium is not installed (apt-get install chromium; .ci/run installs it)' : undefined

export interface Pixel {
  x: number
  y: number
  /** Inside the map's box on the screen. */
  inView: boolean
  /** The colour drawn there by the source tiles (not premultiplied), or null: nothing. */
  rgba: number[] | null
}

interface Leaflet { CRS: { EPSG3857: { latLngToPoint: (ll: unknown, z: number) => { x: number, y: number } } }, latLng: (lat: number, lon: number) => unknown }

/** radius: also look that many pixels around (a 2-pixel mark at a world view, ± Leaflet's rounding); pane: whose canvases (sources, conflicts). */
export async function pixelAt (page: Page, lon: number, lat: number, radius = 0, pane = 'sources'): Promise<Pixel> {
  return await page.evaluate((lon, lat, radius, pane) => {
    const L = (window as unknown as { L: Leaflet }).L
    const [z, clat, clon] = (new URLSearchParams(location.hash.slice(1)).get('map') ?? '0/0/0').split('/').map(Number) as [number, number, number]
    const p = L.CRS.EPSG3857.latLngToPoint(L.latLng(lat, lon), z)
    const c = L.CRS.EPSG3857.latLngToPoint(L.latLng(clat, clon), z)
    const box = (document.getElementById('map') as HTMLElement).getBoundingClientRect()
    const x = box.left + box.width / 2 + p.x - c.x
    const y = box.top + box.height / 2 + p.y - c.y
    let rgba: number[] | null = null
    const canvases = [...document.querySelectorAll<HTMLCanvasElement>(`.leaflet-${pane}-pane canvas`)].map((canvas) => ({ canvas, r: canvas.getBoundingClientRect() }))
    for (let dy = -radius; dy <= radius && rgba === null; dy++) {
      for (let dx = -radius; dx <= radius && rgba === null; dx++) {
        const px = x + dx
        const py = y + dy
        for (const { canvas, r } of canvases) {
          if (px < r.left || px >= r.right || py < r.top || py >= r.bottom) continue
          const d = (canvas.getContext('2d') as CanvasRenderingContext2D)
            .getImageData(Math.floor(((px - r.left) * canvas.width) / r.width), Math.floor(((py - r.top) * canvas.height) / r.height), 1, 1).data
          if ((d[3] as number) > 0) rgba = [...d]
        }
      }
    }
    return { x, y, inView: x >= box.left && x < box.right && y >= box.top && y < box.bottom, rgba }
  }, lon, lat, radius, pane)
}

/**
 * Waits until the page has loaded the tiles in view and (lon, lat) is in view and drawn, or not.
 * The point may be out of view for a while: the page moves the map to what was just uploaded.
 */
export async function waitForPixel (page: Page, lon: number, lat: number, drawn: boolean, timeout = 15_000): Promise<Pixel> {
  const deadline = Date.now() + timeout
  for (;;) {
    const idle = await page.$('#workspace:not([hidden]) #map:not([data-loading])') !== null
    const pixel = await pixelAt(page, lon, lat)
    if (idle && pixel.inView && (pixel.rgba !== null) === drawn) return pixel
    if (Date.now() > deadline) {
      if (!pixel.inView) throw new Error(`(${lon}, ${lat}) is not in view after ${timeout} ms (${pixel.x}, ${pixel.y})`)
      throw new Error(`(${lon}, ${lat}) is ${drawn ? 'not drawn' : 'still drawn'} after ${timeout} ms (${idle ? 'tiles loaded' : 'tiles still loading'})`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Whether a colour is the conflict red (#b3261e) rather than the registered blue (#457b9d). */
export const isRed = (rgba: number[] | null): boolean => rgba !== null && (rgba[0] as number) > (rgba[2] as number) + 60
export const isBlue = (rgba: number[] | null): boolean => rgba !== null && (rgba[2] as number) > (rgba[0] as number) + 40
