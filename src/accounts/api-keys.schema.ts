// TypeBox schemas of the API-key endpoints (POST, GET, DELETE /api-keys) and of POST /oauth/token.
import { type Static, Type } from '@sinclair/typebox'
import { KEY_SCOPES } from '../db/database.js'
import { UtcDateTimeSchema } from '../schemas/primitives.js'
import { KEY_ID_PATTERN } from './api-key-format.js'

export const KeyScopeSchema = Type.Union(KEY_SCOPES.map((s) => Type.Literal(s)), {
  description: 'read: the account\'s reads only (as a viewer at most); write: everything the account\'s role allows.'
})
export const KeyIdSchema = Type.String({ pattern: KEY_ID_PATTERN, description: 'The key\'s identifier (22 base62 characters): the key reads srk_<id>_<secret>; the OAuth2 client_id.' })
const AccountIdSchema = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description: 'An account\'s id (the "sub" of its tokens).' })

export const CreateApiKeySchema = Type.Object({
  // No U+0000 (PostgreSQL text cannot hold it), and not blank.
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$', description: 'Your label for the key, e.g. "qgis laptop".' }),
  scope: KeyScopeSchema,
  expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the key stops working (ISO 8601 with Z or an offset; in the future). Without it, the key works until revoked.' }))
}, { additionalProperties: false })

export const ApiKeySchema = Type.Object({
  id: KeyIdSchema,
  name: Type.String(),
  scope: KeyScopeSchema,
  prefix: Type.String({ description: 'The start of the key (srk_<id>_), to tell keys apart; never the secret.' }),
  account_id: AccountIdSchema,
  created_at: UtcDateTimeSchema,
  expires_at: Type.Optional({ ...UtcDateTimeSchema, description: 'When the key stops working; absent: it does not expire.' }),
  expired: Type.Boolean({ description: 'Whether expires_at has passed: the key is refused.' }),
  last_used_at: Type.Optional({ ...UtcDateTimeSchema, description: 'When the key last authenticated a request (to within API_KEY_LAST_USED_INTERVAL_SECONDS); absent: never.' })
})
export type ApiKeyView = Static<typeof ApiKeySchema>

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ pattern: '^srk_[0-9A-Za-z]{22}_[0-9A-Za-z]{43}$', description: 'The key, shown this once: the service keeps only a hash of it.' }),
  message: Type.String()
})

export const ApiKeyListSchema = Type.Object({
  api_keys: Type.Array(ApiKeySchema, { description: 'Keys not revoked, oldest first (expired ones included).' })
})

export const ListApiKeysQuerySchema = Type.Object({
  account_id: Type.Optional({ ...AccountIdSchema, description: 'Only this account\'s keys. Admins may name any account (without it they get every account\'s keys); others only their own.' })
}, { additionalProperties: false })

export const ApiKeyQuerySchema = Type.Object({
  id: KeyIdSchema
}, { additionalProperties: false })

export const RevokedSchema = Type.Object({ message: Type.String() })

// RFC 6749 §4.4.2 and §5: the client credentials grant, its token and its errors.
export const OAuthTokenRequestSchema = Type.Object({
  grant_type: Type.String({ description: 'client_credentials' }),
  client_id: Type.Optional(Type.String({ description: 'The API key\'s id; or send client_id and client_secret with HTTP Basic instead (RFC 6749 §2.3.1).' })),
  client_secret: Type.Optional(Type.String({ description: 'The API key (srk_…).' })),
  scope: Type.Optional(Type.String({ description: '"read" or "write" (at most the key\'s scope); without it, the key\'s scope.' }))
})

export const OAuthTokenSchema = Type.Object({
  access_token: Type.String({ description: 'A bearer token (a JWT); it stops working when the key is revoked or expires.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the token expires: TOKEN_TTL_SECONDS, or less when the key expires sooner.' }),
  scope: KeyScopeSchema
})

export const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'] as const
export type OAuthErrorCode = typeof OAUTH_ERRORS[number]
export const OAuthErrorSchema = Type.Object({
  error: Type.Union(OAUTH_ERRORS.map((e) => Type.Literal(e))),
  error_description: Type.String()
}, { description: 'RFC 6749 §5.2 error response.' })
