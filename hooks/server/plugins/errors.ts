/**
 * One error handler for the three tiers (docs/style.md rule 6): a request that is not JSON, too large,
 * too deep or of the wrong shape is a 4xx with a JSON reason naming the field; an overloaded
 * process answers 503 with `Retry-After`; a bug is a 500 whose body only points at the log line
 * carrying the request id. A bad parent spec is not an HTTP error at all (the hook answers 200).
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyError } from 'fastify'
import { fieldOfPointer } from '../../k8s/schema-messages.ts'
import type { HookMetrics } from '../metrics.ts'
import { shared } from './shared.ts'

interface ValidationItem {
  instancePath?: string
  message?: string
}

/** `/parent/metadata/name` → `parent.metadata.name`; the body itself is `body`. */
function fieldName(path: string | undefined): string {
  return path === undefined || path === '' || path === '/' ? 'body' : fieldOfPointer(path, '')
}

/** A one-line reason naming each distinct field that failed, at most five. */
export function describeValidation(items: readonly ValidationItem[]): { message: string; fields: string[] } {
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

/** The reason phrase of an HTTP status, as node:http knows it. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? (status < 500 ? 'Client Error' : 'Server Error')
}

/** The error-handler plugin. */
export const errorsPlugin = shared<{ metrics: HookMetrics }>('gpuhooks-errors', async (app, { metrics }) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const hook = request.routeOptions.config.hook ?? 'none'
    if (error.validation !== undefined) {
      const { message, fields } = describeValidation(error.validation)
      metrics.errors.inc({ hook, tier: 'request' })
      request.log.info({ hook, fields }, 'request rejected: %s', message)
      return reply.code(400).send({ error: reasonPhrase(400), message, fields })
    }
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      metrics.errors.inc({ hook, tier: 'request' })
      request.log.info({ hook, code: error.code }, 'request rejected: %s', error.message)
      return reply.code(status).send({ error: reasonPhrase(status), message: error.message })
    }
    if (status === 503) {
      // Overload (`@fastify/under-pressure` has set Retry-After): the caller retries later.
      metrics.errors.inc({ hook, tier: 'overload' })
      request.log.warn({ hook, code: error.code }, 'request refused under load: %s', error.message)
      return reply.code(503).send({ error: reasonPhrase(503), message: error.message })
    }
    metrics.errors.inc({ hook, tier: 'internal' })
    request.log.error({ err: error, hook }, 'hook failed')
    return reply.code(500).send({
      error: reasonPhrase(500),
      message: `internal error; the service log has the details under request id ${request.id}`,
      requestId: request.id
    })
  })
})
