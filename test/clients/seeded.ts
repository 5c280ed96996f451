// What the API-key client tests start from: the service in its own process (on either backend:
// accounts are added before it starts, everything else through its API), organisation A's 55
// half-degree boxes on a grid and organisation B's 5 among them, and a read key of A's editor.
import { spawn } from 'node:child_process'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, collection, createDatabase, feature, startService, targetConfig, type RunningService } from '../helper.js'

type Tap = Parameters<typeof startService>[0]
export type Box = [number, number, number, number]

export interface Seeded {
  service: RunningService
  key: string
  keyId: string
  /** Organisation A's sources: feature id → [minLon, minLat, maxLon, maxLat]. */
  boxes: Map<string, Box>
  /** A's feature ids whose box intersects `bbox`, sorted. */
  inBbox: (bbox: Box) => string[]
}

export async function seededService (t: Tap, env: Record<string, string> = {}): Promise<Seeded> {
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const a = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const b = await addAccount(db, { role: 'editor', organisation: 'org-b' })
  await db.destroy()
  const service = await startService(t, target, env)
  const call = async (path: string, init: { method: string, token: string, body: unknown }) => {
    const res = await fetch(`${service.base}${path}`, { method: init.method, headers: { authorization: `Bearer ${init.token}`, 'content-type': 'application/json' }, body: JSON.stringify(init.body) })
    if (res.status !== 201) throw new Error(`${init.method} ${path}: ${res.status} ${await res.text()}`)
    return res.json() as Promise<Record<string, unknown>>
  }
  const tokenOf = async (account: { email: string, password: string }) => {
    const res = await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: account.email, password: account.password }) })
    return ((await res.json()) as { token: string }).token
  }
  const ring = ([x0, y0, x1, y1]: Box) => [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]
  const boxes = new Map<string, Box>(Array.from({ length: 55 }, (_, i) => {
    const x = 10 + (i % 11)
    const y = 10 + Math.floor(i / 11)
    return [`a-${i}`, [x, y, x + 0.5, y + 0.5]]
  }))
  const tokenA = await tokenOf(a)
  await call('/sources', { method: 'POST', token: tokenA, body: collection(...[...boxes].map(([id, box]) => feature(id, { coordinates: ring(box) }))) })
  await call('/sources', { method: 'POST', token: await tokenOf(b), body: collection(...Array.from({ length: 5 }, (_, i) => feature(`b-${i}`, { coordinates: ring([10.6 + i, 10.6, 10.9 + i, 10.9]) }))) })
  const created = await call('/api-keys', { method: 'POST', token: tokenA, body: { name: 'gis client', scope: 'read' } })
  const inBbox = ([x0, y0, x1, y1]: Box) => [...boxes].filter(([, b]) => b[0] <= x1 && b[2] >= x0 && b[1] <= y1 && b[3] >= y0).map(([id]) => id).sort()
  return { service, key: created.key as string, keyId: created.id as string, boxes, inBbox }
}

export interface Ran { status: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

/**
 * Runs a client to its end without blocking this process (spawnSync would: the service's log
 * lines would wait in their pipe, unread, while the client talks to it).
 */
export function run (cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
    child.once('error', reject)
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr }))
  })
}
