// METRICS_PORT: GET /metrics on a port of its own, without a token (keep the port off the public
// network), beside the service's. Started and closed by server.ts, like the service's listener.
import { type Server, createServer } from 'node:http'
import type { Registry } from 'prom-client'

export async function listenMetrics (registry: Registry, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served here.\n')
      return
    }
    registry.metrics().then((text) => {
      res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text)
    }, () => {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Could not collect the metrics.\n')
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
  return server
}
