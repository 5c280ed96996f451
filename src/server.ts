// Process entry: config, logger, start-up (bootstrap.ts: the database and a complete config),
// the app, listen, and a graceful close on SIGTERM/SIGINT (in-flight requests finish, then the
// database is closed).
import closeWithGrace from 'close-with-grace'
import { pino } from 'pino'
import { buildApp } from './app.js'
import { bootstrap } from './bootstrap.js'
import { ConfigError, loadConfig } from './config.js'
import { DataDirInUseError } from './db/data-dir-lock.js'
import { errorSerializer } from './log.js'
import { listenMetrics } from './ops/metrics-server.js'

let config
try {
  config = loadConfig()
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`)
  process.exit(1)
}

const logger = pino({
  level: config.LOG_LEVEL,
  redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'password', '*.password', 'body.password'], censor: '[redacted]' },
  serializers: { err: errorSerializer(config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace') }
})

let started
try {
  started = await bootstrap(config, logger)
} catch (err) {
  if (err instanceof DataDirInUseError || err instanceof ConfigError) {
    process.stderr.write(`error: ${err.message}\n`)
    process.exit(1)
  }
  logger.fatal({ err }, 'could not open the database')
  process.exit(1)
}

if (started.generatedAdmin !== undefined) {
  // For log shippers: that an admin was created, and which (never its password).
  logger.info({ email: started.generatedAdmin.email, organisation: config.ADMIN_ORG, role: 'admin' }, 'first start: created an admin account with a generated password')
  // For the person at the terminal, once, so the quick start can go straight to POST /token.
  process.stdout.write([
    '',
    'Source Registry: first start, created an admin account (shown once):',
    `  e-mail:   ${started.generatedAdmin.email}`,
    `  password: ${started.generatedAdmin.password}`,
    `Change it: printf %s 'new password' | npm run cli -- account passwd --email ${started.generatedAdmin.email} --password-stdin (with the service stopped)`,
    '', ''
  ].join('\n'))
}

const app = await buildApp({ config: started.config, db: started.db, loggerInstance: logger })

const metricsServer = config.METRICS_PORT === undefined ? undefined : await listenMetrics(app.metrics.registry, config.HOST, config.METRICS_PORT)
if (metricsServer !== undefined) app.log.info({ port: config.METRICS_PORT }, 'metrics listening on their own port (GET /metrics)')

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  const closing = performance.now()
  if (err !== undefined) app.log.error({ err }, 'fatal error, closing')
  else app.log.info({ signal }, 'closing: draining in-flight requests')
  metricsServer?.close()
  await app.close()
  app.log.info({ signal, drainMs: Math.round(performance.now() - closing) }, 'closed')
})

await app.listen({ host: config.HOST, port: config.PORT })
