/**
 * The part of autocannon 8's programmatic API the benchmark uses. autocannon ships no types and
 * `@types/autocannon` is not a dependency; these follow its README ("API", "Results") and
 * `lib/aggregateResult.js`.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Options {
      url: string
      method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
      headers?: Record<string, string>
      /** A string, not a Buffer, in workers mode: the options are cloned into the worker. */
      body?: string
      connections?: number
      /** Seconds. */
      duration?: number
      /** Seconds to wait for a response. */
      timeout?: number
      /** Load generated on this many worker threads instead of the caller's event loop. */
      workers?: number
      title?: string
    }

    /** hdr-histogram-percentiles-obj summary; latency in milliseconds (whole ones). */
    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total?: number
      p2_5: number
      p50: number
      p75: number
      p90: number
      p97_5: number
      p99: number
      p99_9: number
    }

    interface Result {
      title?: string
      url: string
      connections: number
      /** Seconds. */
      duration: number
      /** Connection errors, timeouts included. */
      errors: number
      timeouts: number
      mismatches: number
      non2xx: number
      statusCodeStats: Record<string, { count: number }>
      /** Per-second request counts; `total` is every response received, `sent` every request. */
      requests: Histogram & { sent: number; total: number }
      latency: Histogram & { totalCount: number }
      throughput: Histogram
      start: Date
      finish: Date
    }

    /** The returned instance: an event emitter that is also a promise of the result. */
    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop: () => void
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance

  export = autocannon
}
