// What sharing the tile cache through Redis (issue 50) would cost a hit: GET of a tile's bytes
// from a local redis-server (loopback, ioredis as plugins/rate-limit.ts uses it) against the
// in-process lookup (lru-cache), for the tile sizes bench/tile-cache.mjs measures (z14, z10, z6),
// one request at a time and 16 at once; time and this process's CPU a lookup. Needs redis-server.
// Usage: node bench/redis-tiles.mjs
import { spawn } from 'node:child_process'
import { LRUCache } from 'lru-cache'
import { Redis } from 'ioredis'
import { freePort } from './setup.mjs'

const SIZES = { z14: 1_300, z10: 150_000, z6: 420_000 }
const N = Number(process.env.BENCH_LOOKUPS ?? 2000)
const port = await freePort()
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
process.on('exit', () => server.kill())
const redis = new Redis({ port, lazyConnect: true })
for (let i = 0; i < 50; i++) { try { await redis.connect(); break } catch { await new Promise((resolve) => setTimeout(resolve, 100)) } }
const lru = new LRUCache({ maxSize: 64 * 1024 * 1024, sizeCalculation: (v) => v.length })
const rows = ['| tile | bytes | in-process µs a lookup | Redis µs a lookup, 1 at a time | Redis µs a lookup, 16 at once | Redis CPU µs a lookup (this process) |', '|---|---|---|---|---|---|']
for (const [name, bytes] of Object.entries(SIZES)) {
  const value = Buffer.alloc(bytes, 7)
  lru.set(name, value); await redis.set(name, value)
  let t0 = process.hrtime.bigint()
  for (let i = 0; i < N * 100; i++) lru.get(name)
  const local = Number(process.hrtime.bigint() - t0) / 1000 / (N * 100)
  for (let i = 0; i < 200; i++) await redis.getBuffer(name)
  t0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < N; i++) await redis.getBuffer(name)
  const one = Number(process.hrtime.bigint() - t0) / 1000 / N
  t0 = process.hrtime.bigint()
  for (let i = 0; i < N / 16; i++) await Promise.all(Array.from({ length: 16 }, () => redis.getBuffer(name)))
  const many = Number(process.hrtime.bigint() - t0) / 1000 / N
  const cpu = process.cpuUsage(cpu0)
  rows.push(`| ${name} | ${bytes.toLocaleString('en')} | ${local.toFixed(2)} | ${one.toFixed(0)} | ${many.toFixed(0)} | ${((cpu.user + cpu.system) / (2 * N)).toFixed(0)} |`)
}
process.stdout.write(`${rows.join('\n')}\n`)
redis.disconnect()
process.exit(0)
