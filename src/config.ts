// Environment → typed, frozen Config. Validated once at start-up; a missing or malformed
// variable stops the process with one line naming it.
import { type Static, Type } from '@sinclair/typebox'
import envSchema from 'env-schema'

export const ConfigSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('production'), Type.Literal('development'), Type.Literal('test')], { default: 'development' }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  TRUST_PROXY: Type.Boolean({ default: false, description: 'Take the client address from X-Forwarded-For (only behind a proxy you run).' }),

  DATABASE_URL: Type.String({ minLength: 1, description: 'postgres://user:password@host:port/database' }),
  DB_POOL_MAX: Type.Integer({ default: 10, minimum: 1, maximum: 200 }),
  DB_CONNECT_TIMEOUT_MS: Type.Integer({ default: 2000, minimum: 100 }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({ default: 30000, minimum: 100 }),

  JWT_SECRET: Type.String({ minLength: 32, description: 'HMAC key for HS256 tokens, at least 32 bytes.' }),
  JWT_ISSUER: Type.String({ default: 'source-registry', minLength: 1 }),
  JWT_AUDIENCE: Type.String({ default: 'source-registry', minLength: 1 }),
  TOKEN_TTL_SECONDS: Type.Integer({ default: 3600, minimum: 60, maximum: 604800 }),
  ACCOUNT_CACHE_TTL_SECONDS: Type.Integer({ default: 30, minimum: 0, maximum: 60, description: 'How long an account\'s status is trusted without reading the database.' }),

  MAX_FEATURES: Type.Integer({ default: 1000, minimum: 1, maximum: 100000 }),
  BODY_LIMIT_BYTES: Type.Integer({ default: 10485760, minimum: 1024 }),

  RATE_LIMIT_MAX: Type.Integer({ default: 1200, minimum: 1, description: 'Requests per account (or per address when unauthenticated) per window.' }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ default: 60, minimum: 1 }),
  LOGIN_MAX_FAILURES: Type.Integer({ default: 5, minimum: 1, description: 'Failed logins per e-mail and per address per window before 429.' }),
  LOGIN_FAILURE_WINDOW_SECONDS: Type.Integer({ default: 900, minimum: 1 })
})

export type Config = Readonly<Static<typeof ConfigSchema>>

/** Reads and validates `env`; throws an Error whose message is one line naming the bad variable. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  try {
    const config = envSchema<Static<typeof ConfigSchema>>({ schema: structuredClone(ConfigSchema), data: env, env: false })
    return Object.freeze(config)
  } catch (err) {
    throw new Error(`invalid configuration: ${(err as Error).message.replace(/\n/g, '; ')}`)
  }
}
