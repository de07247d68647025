/**
 * Overload protection: past a bound the service answers 503 with `Retry-After` instead of
 * slowing down for everyone or running out of memory. Metacontroller retries a 503 with backoff,
 * and the API server retries (or fails open/closed as configured) an admission call.
 *
 * Two bounds:
 * - event-loop delay and heap, sampled by `@fastify/under-pressure`;
 * - request bytes in flight: the declared `content-length` of every body being read or handled
 *   (a body without one counts as the body limit). Concurrent large bodies are what exhausts the
 *   heap before a sampler notices; this bound refuses them at the first byte. One request is always
 *   admitted, so a single body up to the body limit is served however large.
 * The probes are exempt from both.
 */
import underPressure from '@fastify/under-pressure'
import { shared } from './shared.ts'

/** Options of {@link loadPlugin}. */
export interface LoadPluginOptions extends Record<string, unknown> {
  /** Largest mean event-loop delay (ms) before refusing; 0 turns the check off. */
  maxEventLoopDelayMs: number
  /** Largest V8 heap in use (bytes) before refusing; 0 turns the check off. */
  maxHeapUsedBytes: number
  /** Largest sum of request body bytes in flight; 0 turns the check off. */
  maxInflightBytes: number
  /** The body limit: what a body of unknown length counts as. */
  bodyLimit: number
  /** Seconds a refused caller is told to wait (`Retry-After`). */
  retryAfterSeconds: number
}

/** The load plugin. */
export const loadPlugin = shared<LoadPluginOptions>('gpuhooks-load', async (app, options) => {
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    maxHeapUsedBytes: options.maxHeapUsedBytes,
    retryAfter: options.retryAfterSeconds,
    message: 'the service is overloaded; retry later'
  })
  if (options.maxInflightBytes <= 0) return
  let inflight = 0
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.pressureHandler !== undefined) return
    const header = request.headers['content-length']
    const declared = header === undefined ? Number.NaN : Number(header)
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD'
    const bytes = !hasBody ? 0 : Number.isSafeInteger(declared) && declared >= 0 ? declared : options.bodyLimit
    if (bytes === 0) return
    if (inflight > 0 && inflight + bytes > options.maxInflightBytes) {
      const error = Object.assign(new Error(`the service is reading ${inflight} request bytes already; retry later`), {
        statusCode: 503,
        code: 'GPUHOOKS_INFLIGHT_BYTES'
      })
      // The body is not read into memory: once the answer is sent, node discards the rest of it
      // as it arrives, so the caller sees the 503 instead of a reset connection.
      reply.header('retry-after', String(options.retryAfterSeconds))
      throw error
    }
    inflight += bytes
    reply.raw.once('close', () => {
      inflight -= bytes
    })
  })
})
