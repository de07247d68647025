/**
 * How the transport's plugins are composed: each concern (errors, ETag, metrics, probes, load,
 * JSON parsing) is one fastify plugin, registered by `buildApp` in order, as fastify's demo app
 * composes its own.
 *
 * These plugins decorate the whole app (an error handler, hooks every route passes through), so
 * they must not be encapsulated; fastify's documented `skip-override` property says so, which is
 * what `fastify-plugin` sets.
 */
import type { FastifyPluginAsync } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Metric and log label of a hook route (`instance_sync`); absent on probes and /metrics. */
    hook?: string
    /**
     * `@fastify/under-pressure`'s per-route override: the probes return nothing from it, which
     * lets them through however loaded the process is.
     */
    pressureHandler?: () => undefined
  }
}

/** `plugin`, marked to decorate the app it is registered on rather than a child context. */
export function shared<O extends Record<string, unknown>>(name: string, plugin: FastifyPluginAsync<O>): FastifyPluginAsync<O> {
  const marked = plugin as FastifyPluginAsync<O> & Record<symbol, unknown>
  marked[Symbol.for('skip-override')] = true
  marked[Symbol.for('fastify.display-name')] = name
  return marked
}
