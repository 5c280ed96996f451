// Process entry: config, logger, listen, graceful close on SIGTERM/SIGINT (in-flight requests
// finish, then the pool is closed).
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { loadConfig } from './config.js'

let config
try {
  config = loadConfig()
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`)
  process.exit(1)
}

const app = await buildApp({
  config,
  logger: {
    level: config.LOG_LEVEL,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'password', '*.password', 'body.password'], censor: '[redacted]' }
  }
})

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err !== undefined) app.log.error({ err }, 'fatal error, closing')
  else app.log.info({ signal }, 'closing: draining in-flight requests')
  await app.close()
})

await app.listen({ host: config.HOST, port: config.PORT })
