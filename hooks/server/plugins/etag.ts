/**
 * ETag for the Metacontroller hooks (a hook's `etag: {enabled: true}`): the tag is a hash of the
 * answer, taken after the hook ran, so a timer resync still sees a fresh answer; a request whose
 * If-None-Match holds that tag gets 304 and Metacontroller reuses its cached body.
 */
import { createHash } from 'node:crypto'
import { shared } from './shared.ts'

/** The ETag plugin: hook routes under `/hooks/` only (admission has no caching contract). */
export const etagPlugin = shared('gpuhooks-etag', async (app) => {
  app.addHook('onSend', async (request, reply, payload) => {
    const hook = request.routeOptions.config.hook
    if (hook === undefined || reply.statusCode !== 200 || typeof payload !== 'string') return payload
    if (!request.url.startsWith('/hooks/')) return payload
    const etag = `"${createHash('sha256').update(payload).digest('base64url').slice(0, 27)}"`
    reply.header('etag', etag)
    if (request.headers['if-none-match'] === etag) {
      reply.code(304)
      return ''
    }
    return payload
  })
})
