/**
 * The HTTP transport: decode, call the pure hook, encode, log, count. Nothing here decides what a
 * controller does.
 *
 * Three error tiers (style.md rule 6): a request that is not JSON, too large, or of the wrong
 * shape is a 400-class answer with a JSON reason naming the field; a bad parent spec is not an
 * HTTP error (the hook answers 200 with a status condition); a bug is a 500 whose body only points
 * at the log line carrying the request id.
 */
import { createHash } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions, type FastifyError } from 'fastify'
import { TypeBoxValidatorCompiler, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TSchema, Static } from '@sinclair/typebox'
import { createMetrics, type HookMetrics } from './metrics.ts'

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
  https?: { cert: string | Buffer, key: string | Buffer }
  /** Clock read once per request and passed to the hook; tests pin it. */
  clock?: () => Date
  /** Readiness, consulted by `/readyz`; `main` turns it false while draining. */
  ready?: () => boolean
}

/** Default `BODY_LIMIT`: Metacontroller requests relating many objects are large. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024

interface ValidationItem { instancePath?: string, message?: string }

/** `/parent/metadata/name` → `parent.metadata.name`; the body itself is `body`. */
function fieldName(path: string | undefined): string {
  if (path === undefined || path === '' || path === '/') return 'body'
  return path.replace(/^\//, '').split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.')
}

/** A one-line reason naming each distinct field that failed, at most five. */
function describeValidation(items: readonly ValidationItem[]): { message: string, fields: string[] } {
  const seen = new Map<string, string>()
  for (const item of items) {
    const field = fieldName(item.instancePath)
    if (!seen.has(field)) seen.set(field, item.message ?? 'is invalid')
  }
  const fields = [...seen.keys()].slice(0, 5)
  const phrase = (text: string): string => (text === 'Expected required property' ? 'is required' : text.toLowerCase())
  const message = fields.map((f) => `${f}: ${phrase(seen.get(f) ?? '')}`).join('; ')
  return { message, fields }
}

/** Builds the app; does not listen. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const surfaces = new Set<Surface>(options.surfaces ?? ['hooks', 'admission'])
  const metrics = options.metrics ?? createMetrics()
  const clock = options.clock ?? (() => new Date())
  const ready = options.ready ?? (() => true)
  const serverOptions: FastifyServerOptions & { https?: { cert: string | Buffer, key: string | Buffer } } = {
    ...(options.loggerInstance !== undefined ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    requestIdHeader: false,
    // Metacontroller polls every parent on each resync: a log line per request would drown the
    // log, so requests are counted in /metrics and only failures are logged.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true
  }
  if (options.https !== undefined) serverOptions.https = options.https
  const app = Fastify(serverOptions).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(TypeBoxValidatorCompiler)
  // Responses are plain data built to the documented shape; JSON.stringify keeps every field of
  // the Kubernetes objects inside them, where a schema-driven serializer would drop unknown ones.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const hook = (request.routeOptions.config as { hook?: string } | undefined)?.hook ?? 'none'
    if (error.validation !== undefined) {
      const { message, fields } = describeValidation(error.validation)
      metrics.errors.inc({ hook, tier: 'request' })
      request.log.info({ hook, fields }, 'request rejected: %s', message)
      return reply.code(400).send({ error: 'Bad Request', message, fields })
    }
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      metrics.errors.inc({ hook, tier: 'request' })
      request.log.info({ hook, code: error.code }, 'request rejected: %s', error.message)
      return reply.code(status).send({ error: httpReason(status), message: error.message })
    }
    metrics.errors.inc({ hook, tier: 'internal' })
    request.log.error({ err: error, hook }, 'hook failed')
    return reply.code(500).send({
      error: 'Internal Server Error',
      message: `internal error; the service log has the details under request id ${request.id}`,
      requestId: request.id
    })
  })

  // ETag for the Metacontroller hooks (a hook's `etag: {enabled: true}`): the tag is a hash of
  // the answer, taken after the hook ran, so a timer resync still sees a fresh answer; a request
  // whose If-None-Match holds that tag gets 304 and Metacontroller reuses its cached body.
  app.addHook('onSend', async (request, reply, payload) => {
    const hook = (request.routeOptions.config as { hook?: string } | undefined)?.hook
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

  app.addHook('onResponse', async (request, reply) => {
    const hook = (request.routeOptions.config as { hook?: string } | undefined)?.hook
    if (hook === undefined) return
    metrics.requests.inc({ hook, code: String(reply.statusCode) })
    metrics.duration.observe({ hook }, reply.elapsedTime / 1000)
  })

  app.get('/healthz', () => ({ status: 'ok' }))
  app.get('/readyz', async (_request, reply) => {
    if (ready()) return { status: 'ready' }
    return reply.code(503).send({ status: 'draining' })
  })
  if (options.serveMetrics ?? true) {
    app.get('/metrics', async (_request, reply) => {
      reply.type(metrics.registry.contentType)
      return reply.send(await metrics.registry.metrics())
    })
  }

  for (const route of options.routes) {
    if (!surfaces.has(route.surface)) continue
    app.post(route.path, { schema: { body: route.schema }, config: { hook: route.hook } }, (request) => {
      const answer = route.handle(request.body, clock())
      request.log.debug({ hook: route.hook }, 'answered')
      return answer
    })
  }
  // Loaded before it is handed out: a route or schema that cannot compile fails here, not on a request.
  await app.ready()
  return app
}

function httpReason(status: number): string {
  switch (status) {
    case 400: return 'Bad Request'
    case 404: return 'Not Found'
    case 405: return 'Method Not Allowed'
    case 413: return 'Payload Too Large'
    case 415: return 'Unsupported Media Type'
    default: return 'Client Error'
  }
}
