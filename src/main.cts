// The process entry that `npm start` and the image run: sizes libuv's threadpool, then loads
// the service (server.ts). CommonJS because libuv reads UV_THREADPOOL_SIZE when its pool starts,
// which the ES module loader does while loading the first module. One thread per core (at least
// 2) holds less memory than libuv's 4 for scrypt's 16 MiB hashes (bench/NOTES.md).
import { availableParallelism } from 'node:os'

process.env.UV_THREADPOOL_SIZE ??= String(Math.max(2, availableParallelism()))
void import('./server.js')
