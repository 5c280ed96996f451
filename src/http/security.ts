// The OpenAPI `security` of the routes: which credentials open them (plugins/auth.ts checks
// them). Here, below the route modules that declare it, not in the plugin above them.

/** A route any credential opens. */
export const SECURITY: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['read'] }]
/** A route that changes data: a `read` key (OAuth2 scope read) may not use it. */
export const WRITE_SECURITY: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['write'] }]
