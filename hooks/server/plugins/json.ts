/**
 * The JSON body parser: fastify's own (secure-json-parse, which refuses `__proto__` and
 * `constructor.prototype` keys), behind a depth check on the raw text, so a body nested deeper
 * than the limit is answered 400 before anything recursive (schema validation, the hooks, the
 * serializer) sees it.
 */
import { jsonDeeperThan } from '../../k8s/json.ts'
import { shared } from './shared.ts'

/** Options of {@link jsonPlugin}. */
export interface JsonPluginOptions extends Record<string, unknown> {
  /** Deepest nesting of objects and arrays accepted. */
  maxDepth: number
}

/** The JSON parser plugin. */
export const jsonPlugin = shared<JsonPluginOptions>('gpuhooks-json', async (app, { maxDepth }) => {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8')
    if (jsonDeeperThan(text, maxDepth)) {
      const error = Object.assign(new Error(`body is nested deeper than ${maxDepth} levels; no Kubernetes object is`), {
        statusCode: 400,
        code: 'GPUHOOKS_JSON_TOO_DEEP'
      })
      done(error, undefined)
      return
    }
    void parse(request, text, done)
  })
})
