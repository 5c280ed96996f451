// Lingering close, as nginx does it: a response sent before the request body was read (413) must
// not be followed by an immediate close. Closing a socket with unread data makes the kernel send
// a reset, and a client still sending its body (fetch, curl, Python's requests) then loses the
// answer it had not read yet ("fetch failed", EPIPE) and cannot tell why. So the write side is
// ended after the response, and the rest of the body is read and discarded before the socket is
// destroyed: as long as it keeps coming (nothing for LINGER_IDLE_MS ends it, nginx's
// lingering_timeout), up to LINGER_MS in all (nginx's lingering_time) and LINGER_BYTES. A short
// bound in all cut off a large body still coming over a slow link or from a busy machine, and the
// client lost its 413 to the reset.
import type { Socket } from 'node:net'

const LINGER_IDLE_MS = 5_000
const LINGER_MS = 30_000
const LINGER_BYTES = 128 * 1024 * 1024
const POLL_MS = 100

/** Each server's lingering sockets, which its shutdown ends at once (endLingering). */
const lingering = new WeakMap<object, Set<Socket>>()

/** Call before the response is sent with `Connection: close`; `server`: the HTTP server the socket came to. */
export function lingerBeforeClose (socket: Socket | null, server: object): void {
  if (socket === null || socket.destroyed) return
  // Node's HTTP server ends a `Connection: close` response with socket.destroySoon(), which
  // destroys the socket as soon as the response is written.
  socket.destroySoon = function lingeringDestroySoon (this: Socket) {
    if (this.destroyed) return
    if (this.writable) this.end()
    const startBytes = this.bytesRead
    const started = performance.now()
    let lastBytes = startBytes
    let lastProgress = started
    // The HTTP parser keeps consuming (and discarding) what arrives; this only bounds it. The
    // parser may read from the handle directly, so progress is read off bytesRead, not 'data'.
    const timer = setInterval(() => {
      const now = performance.now()
      if (this.bytesRead !== lastBytes) { lastBytes = this.bytesRead; lastProgress = now }
      if (now - lastProgress > LINGER_IDLE_MS || now - started > LINGER_MS || this.bytesRead - startBytes > LINGER_BYTES) this.destroy()
    }, POLL_MS)
    timer.unref()
    let sockets = lingering.get(server)
    if (sockets === undefined) lingering.set(server, sockets = new Set())
    sockets.add(this)
    this.once('close', () => { clearInterval(timer); sockets.delete(this) })
    this.resume()
  }
}

/**
 * Ends the server's lingering sockets (a preClose hook): their answers were sent, and a shutdown
 * does not wait out a client still sending a refused body (the server's close waits for every
 * connection, and a lingering one may last LINGER_MS, beyond the shutdown's grace).
 */
export function endLingering (server: object): void {
  for (const socket of lingering.get(server) ?? []) socket.destroy()
}
