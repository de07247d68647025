/**
 * The HTTP transport: decode, call the pure hook, encode, log, count. Nothing here decides what a
 * controller does.
 *
 * The app is composed from one plugin per concern (`plugins/`): the depth-bounded JSON parser,
 * the error handler (the error tiers of style.md rule 6, plus 503 under load), the load bounds,
 * ETag, metrics and the probes; then one POST route per hook, whose answer passes the route's
 * guard (answer-guard.ts) before it is sent.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TSchema, Static } from '@sinclair/typebox'
import { MAX_JSON_DEPTH } from '../k8s/json.ts'
import { guardAnswer, type ChildRule } from '../metacontroller/answer-guard.ts'
import { createMetrics, type HookMetrics } from './metrics.ts'
import { nextRequestId } from './request-id.ts'
import { errorsPlugin } from './plugins/errors.ts'
import { etagPlugin } from './plugins/etag.ts'
import { jsonPlugin } from './plugins/json.ts'
import { loadPlugin } from './plugins/load.ts'
import { metricsPlugin } from './plugins/metrics.ts'
import { probesPlugin } from './plugins/probes.ts'

/** Which listener a route belongs to: plain-HTTP hooks, or the HTTPS admission webhooks. */
export type Surface = 'hooks' | 'admission'

/** One POST route: its request schema and the pure function that answers it. */
export interface HookRoute<S extends TSchema = TSchema> {
  /** URL path, e.g. `/hooks/instance/sync`. */
  path: string
  /** Metric and log label, e.g. `instance_sync`. */
  hook: string
  surface: Surface
  /** Schema of the request body; only the fields the hook reads are constrained. */
  schema: S
  /** The hook: a pure function of the decoded body and the time the request was received. */
  handle: (body: Static<S>, now: Date) => unknown
  /**
   * What the answer may create (hooks/metacontroller/answer-guard.ts): every sync and finalize
   * route names its controller's rule, and an answer that breaks it is never sent; null only for
   * the routes whose answers create nothing (customize, admission).
   */
  guard: ChildRule | null
}

/** Declares a route with the body type inferred from its schema. */
export function hookRoute<S extends TSchema>(route: HookRoute<S>): HookRoute {
  return route as unknown as HookRoute
}

/** Options of {@link buildApp}; tests and `main` build the app the same way. */
export interface AppOptions {
  routes: readonly HookRoute[]
  /** Which routes to serve; both by default (as `inject` tests want). */
  surfaces?: readonly Surface[]
  /** pino options, or false for no logging (the default, for tests). */
  logger?: FastifyServerOptions['logger']
  /** A pino logger to use instead (`main` shares one between its listeners). */
  loggerInstance?: FastifyServerOptions['loggerInstance']
  /** Largest accepted body in bytes (default 16 MiB). */
  bodyLimit?: number
  metrics?: HookMetrics
  /** Serve `GET /metrics` on this app (the admission listener leaves it to the hooks listener). */
  serveMetrics?: boolean
  /** TLS for an HTTPS listener. */
  https?: { cert: string | Buffer; key: string | Buffer }
  /** Clock read once per request and passed to the hook; tests pin it. */
  clock?: () => Date
  /** Readiness, consulted by `/readyz`; `main` turns it false while draining. */
  ready?: () => boolean
  /**
   * Bounds on load, nesting and time; each unset one takes its default ({@link DEFAULT_LIMITS}),
   * except the two sampled ones (event-loop delay, heap), which stay off unless given: they
   * depend on how busy the machine is, so an app built for a test answers the same under any load.
   * `main` passes every bound from the environment.
   */
  limits?: Partial<Limits>
}

/** Default `BODY_LIMIT`: Metacontroller requests relating many objects are large. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024

/** Bounds on what one process takes on; every one is a variable of the process contract. */
export interface Limits {
  /** Deepest JSON nesting accepted (`JSON_MAX_DEPTH`). */
  maxJsonDepth: number
  /** Mean event-loop delay past which requests get 503 (`MAX_EVENT_LOOP_DELAY_MS`; 0 off). */
  maxEventLoopDelayMs: number
  /** V8 heap in use past which requests get 503 (`MAX_HEAP_USED_BYTES`; 0 off). */
  maxHeapUsedBytes: number
  /** Request body bytes in flight past which requests get 503 (`MAX_INFLIGHT_BYTES`; 0 off). */
  maxInflightBytes: number
  /** `Retry-After` of a 503, seconds (`RETRY_AFTER_SECONDS`). */
  retryAfterSeconds: number
  /** Longest time to receive a whole request (`REQUEST_TIMEOUT_SECONDS`). */
  requestTimeoutMs: number
  /** Longest time to receive a request's headers (`HEADERS_TIMEOUT_SECONDS`). */
  headersTimeoutMs: number
  /** How long an idle keep-alive connection stays open (`KEEP_ALIVE_TIMEOUT_SECONDS`). */
  keepAliveTimeoutMs: number
}

/** The defaults of {@link Limits}. */
export const DEFAULT_LIMITS: Limits = {
  maxJsonDepth: MAX_JSON_DEPTH,
  maxEventLoopDelayMs: 1000,
  maxHeapUsedBytes: 1024 * 1024 * 1024,
  maxInflightBytes: 4 * DEFAULT_BODY_LIMIT,
  retryAfterSeconds: 5,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  // Above the 90 s idle timeout of Go's default HTTP transport (Metacontroller, the API server
  // calling a webhook): the client closes an idle connection first, so it never sends a request
  // on a connection the server is closing at that very moment.
  keepAliveTimeoutMs: 95_000
}

/**
 * Builds the app from one plugin per concern; does not listen.
 *
 * Order matters only where one concern reads another's work: the JSON parser and the load bounds
 * come before any route, the error handler before the routes whose errors it answers.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const surfaces = new Set<Surface>(options.surfaces ?? ['hooks', 'admission'])
  const metrics = options.metrics ?? createMetrics()
  const clock = options.clock ?? (() => new Date())
  const limits: Limits = { ...DEFAULT_LIMITS, maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0, ...options.limits }
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const serverOptions: FastifyServerOptions & {
    https?: { cert: string | Buffer; key: string | Buffer }
    http?: { headersTimeout: number; connectionsCheckingInterval: number }
  } = {
    ...(options.loggerInstance !== undefined ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    bodyLimit,
    requestIdHeader: false,
    genReqId: nextRequestId,
    // Metacontroller polls every parent on each resync: a log line per request would drown the
    // log, so requests are counted in /metrics and only failures are logged.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // On close, idle keep-alive connections are ended cleanly; busy ones after their answer.
    forceCloseConnections: 'idle',
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs
  }
  // Node enforces the header and request timeouts when it sweeps its connections; every second
  // (rather than its default 30 s) so that a slow client is cut off close to the timeout.
  const timeouts = { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: 1000 }
  if (options.https !== undefined) serverOptions.https = { ...options.https, ...timeouts }
  else serverOptions.http = timeouts
  const app = Fastify(serverOptions).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(TypeBoxValidatorCompiler)
  // Responses are plain data built to the documented shape; JSON.stringify keeps every field of
  // the Kubernetes objects inside them, where a schema-driven serializer would drop unknown ones.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))

  await app.register(jsonPlugin, { maxDepth: limits.maxJsonDepth })
  await app.register(errorsPlugin, { metrics })
  await app.register(loadPlugin, {
    maxEventLoopDelayMs: limits.maxEventLoopDelayMs,
    maxHeapUsedBytes: limits.maxHeapUsedBytes,
    maxInflightBytes: limits.maxInflightBytes,
    bodyLimit,
    retryAfterSeconds: limits.retryAfterSeconds
  })
  await app.register(etagPlugin)
  await app.register(metricsPlugin, { metrics, serve: options.serveMetrics ?? true })
  await app.register(probesPlugin, { ready: options.ready ?? (() => true) })

  for (const route of options.routes) {
    if (!surfaces.has(route.surface)) continue
    app.post(route.path, { schema: { body: route.schema }, config: { hook: route.hook } }, (request) => {
      const answer = route.handle(request.body, clock())
      // Throws UnsafeAnswerError (a masked 500, logged with the request id) rather than answer
      // an object the controller may not create.
      if (route.guard !== null) guardAnswer(route.hook, route.guard, request.body, answer)
      request.log.debug({ hook: route.hook }, 'answered')
      return answer
    })
  }
  return app
}
