/**
 * One Prometheus registry per process and the makers of metrics registered in it, for both
 * processes of the package: the hook service (server/metrics.ts) and the workload agent
 * (agent/runtime/metrics.ts). Neither imports the other's metrics.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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
