// The generator's floor: an HTTP server that answers every request at once with a fixed JSON
// body, no framework, no database. Driven at the same paced rates as the service, its latency
// is what the load generator and the shared machine add by themselves.
import http from 'node:http'

// FLOOR_BODY_BYTES: a body of that size instead (bench/features.mjs: a page's size).
const size = Number(process.env.FLOOR_BODY_BYTES ?? 0)
const body = size > 0 ? Buffer.from(`{"pad":"${'x'.repeat(Math.max(0, size - 10))}"}`) : Buffer.from('{"ok":true}')
http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
    res.end(body)
  })
}).listen(Number(process.env.PORT), '127.0.0.1')
