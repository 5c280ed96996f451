// kill -9 of the service in the middle of a webhook backlog, on either backend: the service as
// ops run it (its own process), a receiver on loopback; after a restart every event is delivered
// (the killed instance's lease runs out, and the new one sends from the last recorded position).
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { PASSWORD, addAccount, collection, createDatabase, directDb, feature, square, startService } from '../helper.js'

const target = await createDatabase(t)
{
  // The account is added before the service opens the database (an embedded one has one owner).
  const db = await directDb(t, target)
  await addAccount(db, { role: 'editor', organisation: 'org-a', email: 'restart@example.org' })
  await db.destroy()
}

const seen: string[] = []
const receiver = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => { seen.push(String(req.headers['webhook-id'])); setTimeout(() => res.writeHead(200).end(), 20) })
})
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
t.teardown(() => { receiver.closeAllConnections(); receiver.close() })

async function until (what: string, check: () => boolean, ms = 90_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('kill -9 during a backlog of 200 events: all delivered after the restart', async (t) => {
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '3000', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_BASE_MS: '50', EVENTS_POLL_MS: '200' }
  const first = await startService(t, target, env)
  const login = await fetch(`${first.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'restart@example.org', password: PASSWORD }) })
  const auth = { authorization: `Bearer ${((await login.json()) as { token: string }).token}`, 'content-type': 'application/json' }
  const sub = await fetch(`${first.base}/subscriptions`, { method: 'POST', headers: auth, body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`, types: ['source.created'] }) })
  t.equal(sub.status, 201)
  const features = Array.from({ length: 200 }, (_, i) => feature(`r-${i}`, { coordinates: square((i % 100) * 2 - 170, Math.floor(i / 100) * 2 - 60) }))
  const posted = await fetch(`${first.base}/sources`, { method: 'POST', headers: auth, body: JSON.stringify(collection(...features)) })
  t.equal(posted.status, 201)
  await until('the backlog under way', () => seen.length >= 20)
  first.child.kill('SIGKILL')
  await new Promise<void>((r) => first.child.once('exit', () => r()))
  const before = new Set(seen).size
  t.ok(before < 200, `killed mid-backlog, after ${before} of 200`)
  await startService(t, target, env)
  await until('all 200 delivered', () => new Set(seen).size >= 200)
  t.equal(new Set(seen).size, 200, 'none lost')
  t.comment(`kill -9 after ${before} of 200: ${seen.length} deliveries, ${seen.length - new Set(seen).size} duplicates`)
})
