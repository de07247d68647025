/**
 * Prometheus metrics of the hook service: per hook, requests by HTTP code, errors by tier, and
 * latency. One registry per process, shared by the hook and admission listeners.
 */
import type { Counter, Histogram, Registry } from 'prom-client'
import { metricRegistry } from '../metric-registry.ts'

/** The tiers of `gpuhooks_hook_errors_total`: bad input (4xx), a load bound (503), a bug (500). */
export const ERROR_TIERS = ['request', 'overload', 'internal'] as const

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
  const metrics = metricRegistry(processMetrics ? 'gpuhooks_' : undefined)
  return {
    registry: metrics.registry,
    requests: metrics.counter('gpuhooks_hook_requests_total', 'Hook and admission requests answered, by hook and HTTP status code.', [
      'hook',
      'code'
    ]),
    errors: metrics.counter(
      'gpuhooks_hook_errors_total',
      'Hook and admission requests that failed: tier "request" (HTTP 4xx, bad input), "overload" (HTTP 503, a load bound) or "internal" (HTTP 500, a bug).',
      ['hook', 'tier']
    ),
    duration: metrics.histogram(
      'gpuhooks_hook_duration_seconds',
      'Time from request received to response sent, by hook.',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ['hook']
    )
  }
}
