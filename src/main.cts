// The process entry that `npm start` and the image run: sizes libuv's threadpool, then loads
// the service (server.ts). CommonJS because libuv reads UV_THREADPOOL_SIZE when its pool starts,
// which the ES module loader does while loading the first module. One thread per core (at least
// 2), not libuv's 4: each thread hashing a password holds scrypt's 16 MiB, and more threads than
// cores only add memory.
import { availableParallelism } from 'node:os'

process.env.UV_THREADPOOL_SIZE ??= String(Math.max(2, availableParallelism()))
void import('./server.js')
