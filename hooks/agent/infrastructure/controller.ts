/**
 * The CellInfrastructure controller of the agent: a changed CellInfrastructure, and every one in
 * the cache every `resyncMs`, gets a pass (pass.ts) while this replica may act; a
 * pass that reports an error, or throws, is retried with the queue's backoff. It shares the
 * CellNodeSet controller's loop (loop.ts), its leadership and its metrics.
 */
import type { LogTo } from '../../logger.ts'
import { Sleeper, type Clock } from '../runtime/clock.ts'
import { keyOf } from '../../k8s/objects.ts'
import type { ObjectCache, ObjectsApi } from '../model/apis.ts'
import { runInfrastructurePass } from './pass.ts'
import { runKeyLoop } from '../runtime/loop.ts'
import type { AgentMetrics } from '../runtime/metrics.ts'
import { plain } from '../runtime/clients.ts'
import type { WorkQueue } from '../runtime/queue.ts'

/** What the controller works with. */
export interface InfrastructureControllerDeps {
  queue: WorkQueue
  cellInfrastructures: ObjectCache
  objects: ObjectsApi
  active(): boolean
  clock: Clock
  resyncMs: number
  metrics: AgentMetrics
  log: LogTo<'debug' | 'info' | 'warn' | 'error'>
}

/** The CellInfrastructure controller of one agent process. */
export class InfrastructureController {
  private readonly sleeper: Sleeper
  private stopping = false

  constructor(private readonly deps: InfrastructureControllerDeps) {
    this.sleeper = new Sleeper(deps.clock)
  }

  /** Informer handler: a CellInfrastructure was added, changed or deleted. */
  changed(object: unknown): void {
    const key = keyOf(object)
    if (key !== undefined) this.deps.queue.add(key)
  }

  /** Looks again at once whether it may act (call on a change of leadership). */
  wake(): void {
    this.sleeper.wake()
  }

  /** The loop, until `stop()`. */
  run(): Promise<void> {
    return runKeyLoop({
      queue: this.deps.queue,
      sleeper: this.sleeper,
      clock: this.deps.clock,
      resyncMs: this.deps.resyncMs,
      active: () => this.deps.active(),
      stopping: () => this.stopping,
      resync: () => {
        for (const object of this.deps.cellInfrastructures.list()) this.changed(object)
      },
      process: (key) => this.process(key)
    })
  }

  /** Takes no more work; resolves once the pass in progress is done. */
  stop(): Promise<void> {
    this.stopping = true
    this.deps.queue.shutDown()
    this.sleeper.wake()
    return this.deps.queue.drain()
  }

  private async process(key: string): Promise<void> {
    const slash = key.indexOf('/')
    const { queue, log, metrics } = this.deps
    const object = this.deps.cellInfrastructures.get(key.slice(slash + 1), key.slice(0, slash))
    try {
      if (object === undefined) {
        queue.forget(key)
        return
      }
      const report = await runInfrastructurePass(plain(object), this.deps.objects)
      for (const error of report.errors) metrics.errors.inc({ reason: error.reason })
      const level = report.errors.length > 0 ? 'warn' : report.created.length + report.released.length > 0 ? 'info' : 'debug'
      log[level]({ cellInfrastructure: key, ...report }, report.served ? 'infrastructure pass' : 'not served')
      if (report.errors.length > 0) queue.retry(key)
      else queue.forget(key)
    } catch (error) {
      metrics.errors.inc({ reason: 'Internal' })
      log.error(
        { cellInfrastructure: key, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) },
        'pass failed'
      )
      queue.retry(key)
    } finally {
      queue.done(key)
    }
  }
}
