/**
 * Overload protection: past a bound the service answers 503 with `Retry-After` instead of
 * slowing down for everyone or running out of memory. Metacontroller retries a 503 with backoff,
 * and the API server retries (or fails open/closed as configured) an admission call.
 *
 * Two bounds:
 * - event-loop delay and heap, sampled by `@fastify/under-pressure`;
 * - request body bytes in flight (`MAX_INFLIGHT_BYTES`): the bytes of every body received and not
 *   yet answered, counted as they arrive (`arriving-body.ts`). Concurrent large bodies are what
 *   exhausts the heap before a sampler notices. A request whose declared length (the body limit
 *   for a body of unknown length) would pass the bound is refused before its body is read; a body
 *   that passes it while arriving is refused then, and the rest of it discarded. One body is
 *   always admitted, so a single body up to the body limit is served however large.
 * And one bound on time: a body with no byte for `BODY_STALL_TIMEOUT_SECONDS` is answered 408
 * and its connection closed, so a client that sends a large body quickly and then stops holds
 * its bytes for seconds, not for the whole request timeout.
 *
 * A body's bytes are given back exactly once, when the request is over however it ends: its
 * response closed (answered, refused, failed, or its connection gone while it was being
 * answered), or its connection closed. The second is needed because a response pipelined behind
 * one that closes the connection (every parse error closes it, as does a client's
 * `Connection: close`) is queued by node and never closes when the connection does.
 *
 * The probes are exempt from every bound, and `/readyz` stays 200 with the budget spent: a busy
 * process is not a dead one, and a readiness that followed load would take every replica out of
 * the Service at once under the same load (or under the same hostile client), leaving the
 * fail-closed admission webhooks with no endpoint at all.
 */
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import underPressure from '@fastify/under-pressure'
import type { FastifyRequest } from 'fastify'
import { ArrivingBody, Budget } from './arriving-body.ts'
import { shared } from './shared.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body as it arrives, once it is being read (null before, and for a request without one). */
    arrivingBody: ArrivingBody | null
  }
}

/** Options of {@link loadPlugin}. */
export interface LoadPluginOptions extends Record<string, unknown> {
  /** Largest mean event-loop delay (ms) before refusing; 0 turns the check off. */
  maxEventLoopDelayMs: number
  /** Largest V8 heap in use (bytes) before refusing; 0 turns the check off. */
  maxHeapUsedBytes: number
  /** Largest sum of request body bytes in flight; 0 turns the check off. */
  maxInflightBytes: number
  /** The body limit: what a body of unknown length is taken to be when it asks to be admitted. */
  bodyLimit: number
  /** Seconds a refused caller is told to wait (`Retry-After`). */
  retryAfterSeconds: number
  /** Longest wait for the next byte of a body (ms). */
  bodyStallTimeoutMs: number
}

/** A refusal the error handler answers as is: `statusCode` and a `code` for the log. */
function refusal(statusCode: number, code: string, message: string): Error {
  return Object.assign(new Error(message), { statusCode, code })
}

/** The body length a request declares: 0 without a body, the body limit when it does not say. */
function declaredLength(request: FastifyRequest, bodyLimit: number): number {
  if (request.method === 'GET' || request.method === 'HEAD') return 0
  const header = request.headers['content-length']
  if (header === undefined) return request.headers['transfer-encoding'] === undefined ? 0 : bodyLimit
  const declared = Number(header)
  return Number.isSafeInteger(declared) && declared >= 0 ? declared : bodyLimit
}

/** The load plugin. */
export const loadPlugin = shared<LoadPluginOptions>('gpuhooks-load', async (app, options) => {
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    maxHeapUsedBytes: options.maxHeapUsedBytes,
    retryAfter: options.retryAfterSeconds,
    message: 'the service is overloaded; retry later'
  })
  const budget = new Budget(options.maxInflightBytes)
  const retryAfter = String(options.retryAfterSeconds)
  const exempt = (request: FastifyRequest): boolean => request.routeOptions.config.pressureHandler !== undefined
  const overBudget = (more: number): Error =>
    refusal(
      503,
      'GPUHOOKS_INFLIGHT_BYTES',
      `request bodies in flight hold ${budget.held} bytes; ${more} more would pass MAX_INFLIGHT_BYTES=${budget.max}; retry later`
    )

  app.addHook('onRequest', async (request, reply) => {
    if (budget.max <= 0 || exempt(request)) return
    const declared = declaredLength(request, options.bodyLimit)
    // Past the body limit the parser answers 413 without reading: "retry later" would be a lie.
    if (declared === 0 || declared > options.bodyLimit || budget.admits(0, declared)) return
    // The body is not read into memory: once the answer is sent, node discards the rest of it
    // as it arrives, so the caller sees the 503 instead of a reset connection.
    reply.header('retry-after', retryAfter)
    throw overBudget(declared)
  })

  /** The bodies of each connection, given back together when it closes. */
  const byConnection = new WeakMap<Socket, Set<ArrivingBody>>()
  const bodiesOf = (socket: Socket): Set<ArrivingBody> => {
    const known = byConnection.get(socket)
    if (known !== undefined) return known
    const bodies = new Set<ArrivingBody>()
    byConnection.set(socket, bodies)
    socket.once('close', () => {
      for (const body of bodies) body.release()
      bodies.clear()
    })
    return bodies
  }
  const track = (body: ArrivingBody, socket: Socket, response: ServerResponse): void => {
    const bodies = bodiesOf(socket)
    bodies.add(body)
    response.once('close', () => {
      body.release()
      bodies.delete(body)
    })
  }
  // A property of the request rather than a WeakMap entry: a WeakMap keeps its values (and, through
  // them, the request and its body) alive until a full collection, which made every request
  // outlive the young generation.
  app.decorateRequest('arrivingBody', null)
  const stallSeconds = options.bodyStallTimeoutMs / 1000

  app.addHook('preParsing', (request, reply, payload, done) => {
    const declared = declaredLength(request, Number.NaN)
    if (declared === 0 || exempt(request)) return done(null, payload)
    const body = new ArrivingBody(payload, {
      budget,
      stallTimeoutMs: options.bodyStallTimeoutMs,
      overBudget: (more) => {
        reply.header('retry-after', retryAfter)
        return overBudget(more)
      },
      stalled: (received) =>
        refusal(
          408,
          'GPUHOOKS_BODY_STALLED',
          `no byte of the body arrived for ${stallSeconds} s (BODY_STALL_TIMEOUT_SECONDS); ${received} of ${Number.isNaN(declared) ? 'an unknown number of' : declared} bytes received`
        )
    })
    track(body, request.raw.socket, reply.raw)
    request.arrivingBody = body
    done(null, body)
  })

  // The parser closes the connection after any error reading a body, since the client may still
  // be sending it; a body refused for the budget is being discarded, so its connection can go on.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.arrivingBody?.refused === true) reply.header('connection', 'keep-alive')
    done(null, payload)
  })
})
