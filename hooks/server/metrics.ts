/**
 * Prometheus metrics of the hook service: per hook, requests by HTTP code, errors by tier, and
 * latency. One registry per process, shared by the hook and admission listeners.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** The metrics the routes record. */
export interface HookMetrics {
  registry: Registry
  requests: Counter<'hook' | 'code'>
  errors: Counter<'hook' | 'tier'>
  duration: Histogram<'hook'>
}

/**
 * A fresh registry with the hook metrics; `processMetrics` adds Node's default process metrics
 * (off in tests, where several apps share one process).
 */
export function createMetrics(processMetrics = false): HookMetrics {
  const registry = new Registry()
  if (processMetrics) collectDefaultMetrics({ register: registry, prefix: 'gpuhooks_' })
  return {
    registry,
    requests: new Counter({
      name: 'gpuhooks_hook_requests_total',
      help: 'Hook and admission requests answered, by hook and HTTP status code.',
      labelNames: ['hook', 'code'],
      registers: [registry]
    }),
    errors: new Counter({
      name: 'gpuhooks_hook_errors_total',
      help: 'Hook and admission requests that failed: tier "request" (HTTP 4xx, bad input) or "internal" (HTTP 5xx).',
      labelNames: ['hook', 'tier'],
      registers: [registry]
    }),
    duration: new Histogram({
      name: 'gpuhooks_hook_duration_seconds',
      help: 'Time from request received to response sent, by hook.',
      labelNames: ['hook'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry]
    })
  }
}
