/**
 * The agent's controller: the informers' changes become keys in the work queue, and one loop
 * runs a pass (pass.ts) per key while this replica may act (style rule 16; sample-controller's
 * `Run` and `processNextWorkItem`).
 *
 * - A changed CellNodeSet gets a pass; so does every CellNodeSet naming a changed kubeconfig
 *   Secret; and every CellNodeSet in the cache every `resyncMs`.
 * - Passes run one at a time, and only while `active()` (this replica leads, or runs alone, and
 *   both informers have synced); keys added meanwhile wait in the queue, once each.
 * - A pass that reports an error, or throws, is retried with the queue's backoff; one that went
 *   well resets it.
 * - Per CellNodeSet the controller keeps the heartbeat memory the liveness rule needs and one
 *   workload cluster client per kubeconfig Secret (rebuilt when its resourceVersion changes);
 *   a CellNodeSet gone from the cache is forgotten, its metric series too.
 *
 * Each pass's report is logged and counted in `record`; an Event derived from a report (a Node
 * swept, the workload cluster lost) belongs there too.
 */
import type { LogTo } from '../logger.ts'
import { isRecord, ownValue } from '../k8s/objects.ts'
import { ClientCache, plain, type InfraApi, type WorkloadApi } from './clients.ts'
import { Sleeper, type Clock } from './clock.ts'
import type { ReducedKubeconfig } from './kubeconfig.ts'
import { HeartbeatTracker, type LivenessWindows } from './liveness.ts'
import { runKeyLoop } from './loop.ts'
import type { AgentMetrics } from './metrics.ts'
import { runPass, type PassReport } from './pass.ts'
import type { WorkQueue } from './queue.ts'

export { INACTIVE_POLL_MS } from './loop.ts'

/** An informer's cache as the controller reads it. */
export interface ObjectCache {
  get(name: string, namespace?: string): unknown
  list(): ReadonlyArray<unknown>
}

/** What the controller works with. */
export interface ControllerDeps {
  queue: WorkQueue
  cellNodeSets: ObjectCache
  /** The labelled kubeconfig Secrets. */
  secrets: ObjectCache
  infra: InfraApi
  /** Builds the client of a workload cluster from a reduced kubeconfig. */
  workloadClient(config: ReducedKubeconfig): WorkloadApi
  /** True while this replica may run passes. */
  active(): boolean
  clock: Clock
  resyncMs: number
  windows: LivenessWindows
  metrics: AgentMetrics
  log: LogTo<'debug' | 'info' | 'warn' | 'error'>
}

/** `namespace/name` of an object, or undefined when it has no name. */
export function keyOf(object: unknown): string | undefined {
  const metadata = isRecord(object) ? object.metadata : undefined
  const name = ownValue(metadata, 'name')
  const namespace = ownValue(metadata, 'namespace')
  return typeof name === 'string' && name !== '' ? `${typeof namespace === 'string' ? namespace : ''}/${name}` : undefined
}

/** The CellNodeSet controller of one agent process. */
export class AgentController {
  private readonly queue: WorkQueue
  private readonly sleeper: Sleeper
  private readonly trackers = new Map<string, HeartbeatTracker>()
  private readonly clients: ClientCache<WorkloadApi>
  private stopping = false
  private current: string | undefined

  constructor(private readonly deps: ControllerDeps) {
    this.queue = deps.queue
    this.sleeper = new Sleeper(deps.clock)
    this.clients = new ClientCache((config) => deps.workloadClient(config))
  }

  /** The key whose pass runs now, if any. */
  get passing(): string | undefined {
    return this.current
  }

  /** Informer handler: a CellNodeSet was added, changed or deleted. */
  cellNodeSetChanged(object: unknown): void {
    const key = keyOf(object)
    if (key !== undefined) this.queue.add(key)
  }

  /** Informer handler: a kubeconfig Secret changed; every CellNodeSet that names it gets a pass. */
  secretChanged(secret: unknown): void {
    const secretKey = keyOf(secret)
    if (secretKey === undefined) return
    for (const cns of this.deps.cellNodeSets.list()) {
      const metadata = isRecord(cns) ? cns.metadata : undefined
      const ref = ownValue(ownValue(isRecord(cns) ? cns.spec : undefined, 'kubeconfigSecretRef'), 'name')
      const key = keyOf(cns)
      if (
        key !== undefined &&
        typeof ref === 'string' &&
        keyOf({ metadata: { namespace: ownValue(metadata, 'namespace'), name: ref } }) === secretKey
      )
        this.queue.add(key)
    }
  }

  /** Queues every CellNodeSet in the cache. */
  resync(): void {
    for (const cns of this.deps.cellNodeSets.list()) this.cellNodeSetChanged(cns)
  }

  /** Looks again at once whether it may act (call on a change of leadership). */
  wake(): void {
    this.sleeper.wake()
  }

  /** The loop: resyncs, and runs a pass per queued key while active, until `stop()`. */
  run(): Promise<void> {
    return runKeyLoop({
      queue: this.queue,
      sleeper: this.sleeper,
      clock: this.deps.clock,
      resyncMs: this.deps.resyncMs,
      active: () => this.deps.active(),
      stopping: () => this.stopping,
      resync: () => this.resync(),
      process: (key) => this.process(key)
    })
  }

  /** Takes no more work; resolves once the pass in progress is done. */
  stop(): Promise<void> {
    this.stopping = true
    this.queue.shutDown()
    this.sleeper.wake()
    return this.queue.drain()
  }

  /** One pass for `key`, its report recorded, and a retry when it failed. */
  private async process(key: string): Promise<void> {
    const slash = key.indexOf('/')
    const namespace = key.slice(0, slash)
    const name = key.slice(slash + 1)
    const { log, metrics } = this.deps
    const object = this.deps.cellNodeSets.get(name, namespace)
    if (object === undefined) {
      this.trackers.delete(key)
      metrics.reachable.remove({ namespace, name })
      this.queue.forget(key)
      this.queue.done(key)
      return
    }
    this.current = key
    const end = metrics.passSeconds.startTimer()
    try {
      const report = await runPass(plain(object), {
        infra: this.deps.infra,
        secret: (ns, secretName) => plain(this.deps.secrets.get(secretName, ns)),
        workload: (secretKey, resourceVersion, config) => this.workload(secretKey, resourceVersion, config),
        tracker: (k) => this.tracker(k),
        windows: this.deps.windows,
        clock: () => new Date(this.deps.clock.now())
      })
      this.record(key, namespace, name, report)
      if (report.errors.length > 0) this.queue.retry(key)
      else this.queue.forget(key)
    } catch (error) {
      metrics.errors.inc({ reason: 'Internal' })
      log.error(
        { cellNodeSet: key, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) },
        'pass failed'
      )
      this.queue.retry(key)
    } finally {
      end()
      this.current = undefined
      this.queue.done(key)
    }
  }

  /** Logs a pass and counts it in the metrics. */
  private record(key: string, namespace: string, name: string, report: PassReport): void {
    const { log, metrics } = this.deps
    for (const error of report.errors) metrics.errors.inc({ reason: error.reason })
    if (!report.served) {
      // Not served is the normal answer for a CellNodeSet of another agent's pool; a failed read of its pool is not.
      log[report.errors.length > 0 ? 'warn' : 'debug']({ cellNodeSet: key, why: report.notServed, errors: report.errors }, 'not served')
      return
    }
    metrics.reachable.set({ namespace, name }, report.reachable === 'Reachable' ? 1 : 0)
    if (report.reachable !== 'Reachable' && report.reachable !== undefined) metrics.errors.inc({ reason: report.reachable })
    if (report.nodeWrites.patch > 0) metrics.nodeWrites.inc({ action: 'patch' }, report.nodeWrites.patch)
    if (report.nodeWrites.delete > 0) metrics.nodeWrites.inc({ action: 'delete' }, report.nodeWrites.delete)
    const level = report.errors.length > 0 || report.reachable !== 'Reachable' || report.statusProblems !== undefined ? 'warn' : 'debug'
    log[level]({ cellNodeSet: key, ...report }, 'pass')
  }

  private workload(secretKey: string, resourceVersion: string, config: ReducedKubeconfig): WorkloadApi {
    const { client, built } = this.clients.get(secretKey, resourceVersion, config)
    if (built) this.deps.log.info({ secret: secretKey, resourceVersion }, 'workload cluster client built from the kubeconfig Secret')
    return client
  }

  private tracker(key: string): HeartbeatTracker {
    let tracker = this.trackers.get(key)
    if (tracker === undefined) this.trackers.set(key, (tracker = new HeartbeatTracker(this.deps.windows.startupMs)))
    return tracker
  }
}
