/**
 * Counting and timing every hook answer, and serving `GET /metrics`.
 */
import type { HookMetrics } from '../metrics.ts'
import { shared } from './shared.ts'

/** Options of {@link metricsPlugin}. */
export interface MetricsPluginOptions extends Record<string, unknown> {
  metrics: HookMetrics
  /** Serve `GET /metrics` (the admission listener leaves it to the hooks listener). */
  serve: boolean
}

/** The metrics plugin. */
export const metricsPlugin = shared<MetricsPluginOptions>('gpuhooks-metrics', async (app, { metrics, serve }) => {
  app.addHook('onResponse', async (request, reply) => {
    const hook = request.routeOptions.config.hook
    if (hook === undefined) return
    metrics.requests.inc({ hook, code: String(reply.statusCode) })
    metrics.duration.observe({ hook }, reply.elapsedTime / 1000)
  })
  if (serve) {
    app.get('/metrics', async (_request, reply) => {
      reply.type(metrics.registry.contentType)
      return reply.send(await metrics.registry.metrics())
    })
  }
})
