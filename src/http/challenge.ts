// WWW-Authenticate for every 401 (RFC 9110 §11.6.1): the schemes the service takes, Bearer
// (RFC 6750: a token, or an API key) and Basic (RFC 7617: any user name, an API key as the
// password), so a client knows what to send. error="invalid_token" where a bearer token was
// sent and refused. A browser's script is offered Bearer alone: a Basic challenge in the answer
// to a fetch() makes the browser open its own password dialog over the page. A script is known
// by Sec-Fetch-Mode other than navigate (browsers send it to https and localhost origins only)
// or by X-Requested-With, which the map page sends everywhere.
import type { FastifyRequest } from 'fastify'

export const REALM = 'source-registry'
const BEARER = `Bearer realm="${REALM}"`
const BASIC = `Basic realm="${REALM}", charset="UTF-8"`

export function challenge (request: FastifyRequest, { invalidToken = false }: { invalidToken?: boolean } = {}): string {
  const bearer = invalidToken ? `${BEARER}, error="invalid_token"` : BEARER
  const mode = request.headers['sec-fetch-mode']
  const fromScript = (mode !== undefined && mode !== 'navigate') || request.headers['x-requested-with'] !== undefined
  return fromScript ? bearer : `${bearer}, ${BASIC}`
}
