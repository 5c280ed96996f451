// libpq's multi-host connection strings, which node-postgres does not read: the URL form
// (postgres://user@a:5432,b:5433/db?target_session_attrs=read-write) and the keyword form
// (host=a,b port=5432,5433 dbname=db target_session_attrs=read-write). Each is split into one
// single-host postgres:// URL per host, in order, that pg reads as it reads any URL (sslmode and
// the other parameters kept), and the target_session_attrs the chosen host must satisfy.

export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const
export type TargetSessionAttrs = typeof TARGET_SESSION_ATTRS[number]

export interface HostTarget {
  /** host:port, for logs, health and metrics (never a password). */
  name: string
  /** A single-host postgres:// URL pg reads. */
  url: string
}

export interface ConnectionTargets {
  hosts: HostTarget[]
  targetSessionAttrs: TargetSessionAttrs
}

const isAttrs = (v: string): v is TargetSessionAttrs => (TARGET_SESSION_ATTRS as readonly string[]).includes(v)

function attrsOf (value: string | null | undefined): TargetSessionAttrs {
  if (value === null || value === undefined || value === '') return 'any'
  if (!isAttrs(value)) throw new Error(`target_session_attrs=${value} is not one of ${TARGET_SESSION_ATTRS.join(', ')}`)
  return value
}

/** "host:port", "[::1]:5432" or "host" → [host, port]. */
function splitHostPort (text: string): [string, string | undefined] {
  const v6 = /^\[([^\]]+)\](?::(\d*))?$/.exec(text)
  if (v6 !== null) return [`[${v6[1] as string}]`, v6[2] === '' ? undefined : v6[2]]
  const i = text.lastIndexOf(':')
  return i < 0 ? [text, undefined] : [text.slice(0, i), text.slice(i + 1) === '' ? undefined : text.slice(i + 1)]
}

const URL_FORM = /^(postgres(?:ql)?):\/\/(?:([^@/?]*)@)?([^/?]*)(\/[^?]*)?(?:\?(.*))?$/

function fromUrl (text: string): ConnectionTargets {
  const m = URL_FORM.exec(text)
  if (m === null) throw new Error('not a postgres:// URL')
  const [, scheme, userinfo, hostList, path, query] = m
  const params = new URLSearchParams(query ?? '')
  const targetSessionAttrs = attrsOf(params.get('target_session_attrs'))
  params.delete('target_session_attrs')
  const rest = params.toString()
  const auth = userinfo === undefined ? '' : `${userinfo}@`
  const hosts = (hostList ?? '').split(',').map((h) => {
    const [host, port] = splitHostPort(h)
    const hostPort = host === '' ? '' : (port === undefined ? host : `${host}:${port}`)
    return {
      name: `${host === '' ? 'localhost' : decodeURIComponent(host)}:${port ?? '5432'}`,
      url: `${scheme as string}://${auth}${hostPort}${path ?? ''}${rest === '' ? '' : `?${rest}`}`
    }
  })
  return { hosts, targetSessionAttrs }
}

/** libpq's keyword/value form: key=value pairs, values optionally single-quoted with \' and \\. */
function keywords (text: string): Map<string, string> {
  const out = new Map<string, string>()
  const re = /\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))\s*/y
  while (re.lastIndex < text.length) {
    const m = re.exec(text)
    if (m === null) throw new Error('neither a postgres:// URL nor key=value pairs')
    out.set(m[1] as string, m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] as string))
  }
  return out
}

const KEYWORD_TO_URL: Record<string, string> = { sslmode: 'sslmode', application_name: 'application_name', connect_timeout: 'connect_timeout', options: 'options', sslcert: 'sslcert', sslkey: 'sslkey', sslrootcert: 'sslrootcert' }

function fromKeywords (text: string): ConnectionTargets {
  const kv = keywords(text)
  for (const key of kv.keys()) {
    if (!['host', 'hostaddr', 'port', 'user', 'password', 'dbname', 'target_session_attrs', ...Object.keys(KEYWORD_TO_URL)].includes(key)) {
      throw new Error(`the connection keyword ${key} is not supported here (use the URL form)`)
    }
  }
  const hostList = (kv.get('host') ?? kv.get('hostaddr') ?? 'localhost').split(',')
  const ports = (kv.get('port') ?? '').split(',')
  if (ports.length > 1 && ports.length !== hostList.length) throw new Error(`${hostList.length} hosts but ${ports.length} ports`)
  const user = kv.get('user')
  const password = kv.get('password')
  const auth = user === undefined ? '' : `${encodeURIComponent(user)}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@`
  const params = new URLSearchParams()
  for (const [key, name] of Object.entries(KEYWORD_TO_URL)) {
    const v = kv.get(key)
    if (v !== undefined) params.set(name, v)
  }
  const db = kv.get('dbname')
  const hosts = hostList.map((host, i) => {
    const port = (ports.length === 1 ? ports[0] : ports[i]) || '5432'
    // A Unix socket directory travels as ?host= (pg-connection-string reads it so).
    const socket = host.startsWith('/')
    const q = new URLSearchParams(params)
    if (socket) { q.set('host', host); q.set('port', port) }
    const hostPart = socket ? '' : `${host.includes(':') ? `[${host}]` : host}:${port}`
    const qs = q.toString()
    return { name: `${host}:${port}`, url: `postgres://${auth}${hostPart}/${db === undefined ? '' : encodeURIComponent(db)}${qs === '' ? '' : `?${qs}`}` }
  })
  return { hosts, targetSessionAttrs: attrsOf(kv.get('target_session_attrs')) }
}

/** Splits a connection string of either form into its hosts; throws with what is wrong. */
export function parseTargets (text: string): ConnectionTargets {
  const t = text.trim()
  return /^postgres(ql)?:\/\//.test(t) ? fromUrl(t) : fromKeywords(t)
}

/** Whether pg can take this string as it is: one host and no target_session_attrs to check. */
export function isPlain (targets: ConnectionTargets): boolean {
  return targets.hosts.length === 1 && targets.targetSessionAttrs === 'any'
}

/**
 * The list DATABASE_REPLICA_URLS: connection strings separated by commas where a comma starts the
 * next postgres:// URL (a URL's own host list has commas too), or by semicolons (for the keyword form).
 */
export function splitConnectionList (text: string): string[] {
  return text.split(/;|,(?=\s*postgres(?:ql)?:\/\/)/).map((s) => s.trim()).filter((s) => s !== '')
}
