/**
 * Prometheus metrics of the hook service: per hook, requests by HTTP code, errors by tier, and
 * latency. One registry per process, shared by the hook and admission listeners.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** The tiers of `gpuhooks_hook_errors_total`: bad input (4xx), a load bound (503), a bug (500). */
export const ERROR_TIERS = ['request', 'overload', 'internal'] as const

/** The metrics the routes record. */
export interface HookMetrics {
  registry: Registry
  requests: Counter<'hook' | 'code'>
  errors: Counter<'hook' | 'tier'>
  duration: Histogram<'hook'>
}

/** A registry and makers of metrics registered in it. */
export interface MetricRegistry {
  registry: Registry
  counter<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>
  gauge<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Gauge<L>
  histogram<L extends string = string>(name: string, help: string, buckets: number[], labelNames?: readonly L[]): Histogram<L>
}

/**
 * A fresh registry, for the hook service and the workload agent alike. `processPrefix` adds Node's
 * default process metrics under that prefix; tests leave them out, since several registries share
 * one process there.
 */
export function metricRegistry(processPrefix?: string): MetricRegistry {
  const registry = new Registry()
  if (processPrefix !== undefined) collectDefaultMetrics({ register: registry, prefix: processPrefix })
  const registers = [registry]
  return {
    registry,
    counter: (name, help, labelNames = []) => new Counter({ name, help, labelNames, registers }),
    gauge: (name, help, labelNames = []) => new Gauge({ name, help, labelNames, registers }),
    histogram: (name, help, buckets, labelNames = []) => new Histogram({ name, help, buckets, labelNames, registers })
  }
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
