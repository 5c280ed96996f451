// The process entry that `npm start` and the image run: sizes libuv's threadpool, then loads
// the service (server.ts). CommonJS on purpose: libuv reads UV_THREADPOOL_SIZE once, when the
// pool starts, and Node's ES module loader starts it while it loads the first module file, so
// only code that runs before any ES module is loaded can still set it.
//
// Password hashing (scrypt, 16 MiB per hash) runs in that pool, and each pool thread's malloc
// arena keeps its 16 MiB after a hash is done. With libuv's default of 4 threads on a 2-core
// machine that was ~30 MB more RSS under a POST /token load (smaps: four 16 MiB arenas instead
// of two) for no more logins per second. So: one thread per core, at least 2, unless
// UV_THREADPOOL_SIZE is set.
import { availableParallelism } from 'node:os'

process.env.UV_THREADPOOL_SIZE ??= String(Math.max(2, availableParallelism()))
void import('./server.js')
