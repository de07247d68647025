/**
 * The JSON body parser: fastify's own (secure-json-parse, which refuses `__proto__` and
 * `constructor.prototype` keys), then a depth check on the parsed value, so a body nested deeper
 * than the limit is answered 400 before anything recursive (schema validation, the hooks, the
 * serializer) sees it. Parsing and the prototype scan are iterative, so they are safe on a body
 * of any depth (see `k8s/json.ts` for why the check runs on the value rather than the text).
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
    void parse(request, text, (error, value) => {
      if (error !== null && error !== undefined) {
        done(error, undefined)
        return
      }
      if (jsonDeeperThan(value, maxDepth)) {
        const tooDeep = Object.assign(new Error(`body is nested deeper than ${maxDepth} levels; no Kubernetes object is`), {
          statusCode: 400,
          code: 'GPUHOOKS_JSON_TOO_DEEP'
        })
        done(tooDeep, undefined)
        return
      }
      done(null, value)
    })
  })
})
