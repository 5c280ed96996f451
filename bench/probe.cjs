// Diagnostic preload for the service (not used by `make bench`): what the service itself sees,
// to set against the load generator's latency. Each SIGWINCH prints, then resets:
// - server time: from node:http's 'request' event to the response's 'finish' (p50/p99/max);
// - event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution);
// - GC pauses by kind (count, longest, total), from PerformanceObserver 'gc' entries.
// Use: node --require ./bench/probe.cjs dist/main.cjs; kill -WINCH <pid> before and after a run.
/* eslint-disable @typescript-eslint/no-require-imports -- a --require preload is CommonJS: like dist/main.cjs it must run before the ES module loader starts libuv's threadpool. */
const http = require('node:http')
const { monitorEventLoopDelay, performance, PerformanceObserver, constants } = require('node:perf_hooks')

const loop = monitorEventLoopDelay({ resolution: 1 })
loop.enable()
const times = []
const emit = http.Server.prototype.emit
http.Server.prototype.emit = function (event, req, res) {
  if (event === 'request') {
    const t = performance.now()
    res.on('finish', () => times.push(performance.now() - t))
  }
  return emit.apply(this, arguments)
}
let gcs = []
new PerformanceObserver((list) => { gcs.push(...list.getEntries()) }).observe({ entryTypes: ['gc'] })

process.on('SIGWINCH', () => {
  times.sort((a, b) => a - b)
  const q = (p) => (times[Math.ceil(p * times.length) - 1] ?? 0).toFixed(1)
  const ms = (ns) => (ns / 1e6).toFixed(1)
  const gc = (kind, label) => {
    const xs = gcs.filter((e) => e.detail.kind === kind)
    return `${label} ${xs.length} (max ${xs.reduce((m, e) => Math.max(m, e.duration), 0).toFixed(1)}, total ${xs.reduce((m, e) => m + e.duration, 0).toFixed(0)} ms)`
  }
  process.stderr.write(`[probe] requests ${times.length}: server p50 ${q(0.5)} p99 ${q(0.99)} max ${q(1)} ms | ` +
    `event-loop delay p99 ${ms(loop.percentile(99))} max ${ms(loop.max)} ms | ` +
    `gc ${gc(constants.NODE_PERFORMANCE_GC_MINOR, 'scavenge')}, ${gc(constants.NODE_PERFORMANCE_GC_MAJOR, 'mark-compact')}\n`)
  times.length = 0
  loop.reset()
  gcs = []
})
