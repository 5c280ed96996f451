// Where a webhook may be sent: SSRF checks on a subscription's URL, at POST /subscriptions and
// again at every connection (the address DNS gives then is the one checked and the one used, so
// a name that later resolves elsewhere, DNS rebinding, is refused too). Unless
// WEBHOOK_ALLOW_PRIVATE: https only, and no loopback, private, link-local, shared, multicast,
// reserved or cloud-metadata address, in IPv4, IPv6 or IPv4 inside IPv6.
import { lookup } from 'node:dns'
import { BlockList, isIP } from 'node:net'

const BLOCKED = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) BLOCKED.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['::', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]
] as const) BLOCKED.addSubnet(net, bits, 'ipv6')

/** Why an address may not receive webhooks; undefined when it may. */
export function refusedAddress (address: string): string | undefined {
  const family = isIP(address)
  if (family === 0) return `${address} is not an IP address`
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
    if (mapped !== undefined) return refusedAddress(mapped)
    // ::ffff:a.b.c.d written in hex (::ffff:7f00:1).
    const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
    if (hex !== null) {
      const hi = parseInt(hex[1] as string, 16)
      const lo = parseInt(hex[2] as string, 16)
      return refusedAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`)
    }
  }
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6')
    ? `${address} is a loopback, private, link-local, metadata or reserved address`
    : undefined
}

/** Why a URL may not receive webhooks; `allowable` when WEBHOOK_ALLOW_PRIVATE would allow it. */
export class RefusedUrl extends Error {
  constructor (message: string, readonly allowable = false) { super(message) }
}

/** What a refusal that WEBHOOK_ALLOW_PRIVATE lifts adds, so that webhooks can be tried locally. */
export const ALLOW_PRIVATE_HINT = 'An operator can allow http and private addresses (development and tests only) by starting the service with WEBHOOK_ALLOW_PRIVATE=true'


function hostOf (url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/** Checks a URL's form; then the addresses its host resolves to. Throws RefusedUrl. */
export async function checkWebhookUrl (text: string, allowPrivate: boolean): Promise<URL> {
  let url: URL
  try { url = new URL(text) } catch { throw new RefusedUrl('is not an absolute URL') }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw new RefusedUrl(`must be https${allowPrivate ? ' or http' : ''}`, !allowPrivate && url.protocol === 'http:')
  if (url.username !== '' || url.password !== '') throw new RefusedUrl('must not hold credentials')
  if (url.hash !== '') throw new RefusedUrl('must not have a fragment')
  if (allowPrivate) return url
  const host = hostOf(url).toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) throw new RefusedUrl(`${host} is a local name`, true)
  const addresses = isIP(host) !== 0 ? [host] : await resolveAll(host)
  for (const a of addresses) {
    const why = refusedAddress(a)
    if (why !== undefined) throw new RefusedUrl(`${host} resolves to ${why.replace(/^\S+ is /, 'an address that is ')} (${a})`, true)
  }
  return url
}

function resolveAll (host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    lookup(host, { all: true, verbatim: true }, (err, found) => {
      if (err !== null) reject(new RefusedUrl(`${host} does not resolve (${err.code ?? err.message})`))
      else resolve(found.map((f) => f.address))
    })
  })
}

/**
 * dns.lookup for the delivering HTTP agent: the addresses are checked when the connection is
 * made, and only an allowed one is used.
 */
export const checkedLookup: typeof lookup = ((host: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | Array<{ address: string, family: number }>, family?: number) => void) => {
  lookup(host, { ...options, all: true }, (err, found) => {
    if (err !== null) { callback(err, ''); return }
    const allowed = found.filter((f) => refusedAddress(f.address) === undefined)
    if (allowed.length === 0) {
      callback(Object.assign(new Error(`${host} resolves only to refused addresses (${found.map((f) => f.address).join(', ')})`), { code: 'EADDRREFUSED' }), '')
      return
    }
    if ((options as { all?: boolean }).all === true) callback(null, allowed)
    else callback(null, (allowed[0] as { address: string }).address, (allowed[0] as { family: number }).family)
  })
}) as typeof lookup
