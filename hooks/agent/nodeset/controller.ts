/**
 * The agent's controller: the informers' changes become keys in the work queue, and the lane
 * scheduler (lanes.ts) runs a pass (pass.ts) per key while this replica may act (style rule 16;
 * sample-controller's `Run` and `processNextWorkItem`).
 *
 * - A changed CellNodeSet gets a pass, and every CellNodeSet in the cache gets one every
 *   `resyncMs`. Kubeconfig Secrets are not watched: each pass reads its Secret by name, so a
 *   rotated credential takes effect at the next pass.
 * - Passes run in lanes, one per workload cluster (a kubeconfig Secret), several lanes at once
 *   (`bounds.workers`, `bounds.namespaceWorkers`), and only while `active()` (this replica
 *   leads, or runs alone, and the informers have synced); keys added meanwhile wait in the
 *   queue, once each.
 * - Each pass has a deadline (`bounds.timeoutMs`, on the injected clock): past it, its calls to
 *   the workload cluster are abandoned, the pool's status says so (Unreachable), it is counted
 *   (`PassDeadline`), and it is not retried before the next resync.
 * - A pass that reports an error, or throws, is retried with the queue's backoff; one that went
 *   well resets it.
 * - Per CellNodeSet the controller keeps the heartbeat memory the liveness rule needs and one
 *   workload cluster client per kubeconfig Secret (rebuilt when its resourceVersion changes);
 *   a CellNodeSet gone from the cache is forgotten, its metric series too.
 *
 * Each pass's report is logged and counted in `record`; an Event derived from a report (a Node
 * swept, the workload cluster lost) belongs there too.
 */
import type { CellNodeSetStatus } from '../../api/cellnodeset.ts'
import type { LogTo } from '../../logger.ts'
import { keyOf, ownValue } from '../../k8s/objects.ts'
import { ClientCache, plain, statusCode } from '../runtime/clients.ts'
import type { InfraApi, ObjectCache, WorkloadApi } from '../model/apis.ts'
import type { PassBounds } from '../runtime/config.ts'
import { LaneScheduler, type Lane } from './lanes.ts'
import { newRound, secretRefOf, type Round } from './round.ts'
import { abandonOn, type WorkloadConnection } from '../workload/client.ts'
import { ByteBudget, type ReadLimits } from '../workload/http.ts'
import type { Clock } from '../runtime/clock.ts'
import type { ReducedKubeconfig } from '../workload/kubeconfig.ts'
import { HeartbeatTracker } from './decide/liveness.ts'
import type { LivenessWindows, PodList } from '../model/observed.ts'
import type { AgentMetrics } from '../runtime/metrics.ts'
import { EventLimiter, type EventLimits } from '../runtime/event-limiter.ts'
import { runPass, type PassReport } from './pass.ts'
import { listPendingPods } from './snapshot.ts'
import type { PhysicalGpuIndex } from './physical-gpus.ts'
import { poolEvents } from './decide/pool-events.ts'
import { poolGauges } from './decide/pool-gauges.ts'
import type { WorkQueue } from '../runtime/queue.ts'

/** What the controller works with. */
export interface ControllerDeps {
  queue: WorkQueue
  cellNodeSets: ObjectCache
  infra: InfraApi
  /** Builds the connection to a workload cluster from a reduced kubeconfig. */
  workloadClient(config: ReducedKubeconfig): WorkloadConnection
  /** The deadline, the workers and the byte budget of passes (config.ts). */
  bounds: Pick<PassBounds, 'timeoutMs' | 'workers' | 'namespaceWorkers' | 'maxPassBytes' | 'maxPendingPods'>
  /** True while this replica may run passes. */
  active(): boolean
  clock: Clock
  resyncMs: number
  windows: LivenessWindows
  /** The Node keys the admin permits past the restricted-key rule (config.ts). */
  permittedNodeKeys?: readonly string[]
  /** The infrastructure cluster's physical GPUs, from the agent's ResourceSlice and ResourceClaim informers. */
  physicalGpus?: Pick<PhysicalGpuIndex, 'counts'>
  metrics: AgentMetrics
  log: LogTo<'debug' | 'info' | 'warn' | 'error'>
  /** How often Events about a pool may be written (event-limiter.ts's defaults when absent). */
  eventLimits?: EventLimits
}

/** The CellNodeSet controller of one agent process. */
export class AgentController {
  private readonly queue: WorkQueue
  private readonly lanes: LaneScheduler<Round>
  private readonly trackers = new Map<string, HeartbeatTracker>()
  private readonly clients: ClientCache<WorkloadConnection>
  private readonly limiter: EventLimiter
  /** Per CellNodeSet, its status after this process's last pass, as the Events have told it. */
  private readonly told = new Map<string, CellNodeSetStatus>()

  constructor(private readonly deps: ControllerDeps) {
    this.queue = deps.queue
    this.lanes = new LaneScheduler({
      queue: deps.queue,
      clock: deps.clock,
      resyncMs: deps.resyncMs,
      workers: deps.bounds.workers,
      namespaceWorkers: deps.bounds.namespaceWorkers,
      active: () => deps.active(),
      laneOf: (key) => this.laneOf(key),
      resync: () => this.resync(),
      newRound: () => newRound(deps.infra),
      process: (key, round) => this.process(key, round)
    })
    this.clients = new ClientCache(
      (config) => deps.workloadClient(config),
      (connection) => connection.close()
    )
    this.limiter = new EventLimiter(deps.eventLimits)
  }

  /** The keys whose passes run now. */
  get passing(): string[] {
    return this.lanes.passing
  }

  /** Informer handler: a CellNodeSet was added, changed or deleted. */
  cellNodeSetChanged(object: unknown): void {
    const key = keyOf(object)
    if (key !== undefined) this.queue.add(key)
  }

  /** Queues every CellNodeSet in the cache, and closes the clients of Secrets none of them names. */
  resync(): void {
    const secrets = new Set<string>()
    for (const cns of this.deps.cellNodeSets.list()) {
      this.cellNodeSetChanged(cns)
      const ref = secretRefOf(cns)
      if (ref !== undefined) secrets.add(ref)
    }
    this.clients.retain(secrets)
  }

  /** Looks again at once whether it may act (call on a change of leadership). */
  wake(): void {
    this.lanes.wake()
  }

  /** Resyncs, and runs passes of queued keys while active, until `stop()`. */
  run(): Promise<void> {
    return this.lanes.run()
  }

  /** Takes no more work; resolves once the passes in progress are done. */
  stop(): Promise<void> {
    this.queue.shutDown()
    this.lanes.stop()
    return this.queue.drain()
  }

  /**
   * The lane of a CellNodeSet: its kubeconfig Secret (`namespace/name`), the workload cluster as
   * the agent knows it; one whose Secret cannot be read from the cache runs in a lane of its own.
   */
  private laneOf(key: string): Lane {
    const namespace = key.slice(0, key.indexOf('/'))
    const ref = secretRefOf(this.deps.cellNodeSets.get(key.slice(namespace.length + 1), namespace))
    return { lane: ref ?? `${key}#`, namespace }
  }

  /**
   * One pass for `key` within its deadline, its report recorded, and a retry when it failed (not
   * when it overran: a slow cluster is asked again at the next resync, not sooner).
   */
  private async process(key: string, round: Round): Promise<void> {
    const slash = key.indexOf('/')
    const namespace = key.slice(0, slash)
    const name = key.slice(slash + 1)
    const { log, metrics } = this.deps
    const object = this.deps.cellNodeSets.get(name, namespace)
    if (object === undefined) {
      this.trackers.delete(key)
      this.told.delete(key)
      metrics.setReachable(namespace, name, undefined)
      metrics.setPool(namespace, name, undefined)
      this.queue.forget(key)
      this.queue.done(key)
      return
    }
    const end = metrics.passSeconds.startTimer()
    const { timeoutMs, maxPassBytes } = this.deps.bounds
    const pass = new AbortController()
    const cancelDeadline = this.deps.clock.after(timeoutMs, () =>
      pass.abort(new Error(`the pass took longer than ${timeoutMs / 1000} s (AGENT_PASS_TIMEOUT_SECONDS) and was abandoned`))
    )
    const limits: ReadLimits = { signal: pass.signal, budget: new ByteBudget(maxPassBytes) }
    // The workload cluster this pass reads, as its client was asked for: the round's pending list is shared under it.
    let cluster = ''
    try {
      const report = await runPass(plain(object), {
        infra: this.deps.infra,
        secret: (ns, secretName) => round.secret(ns, secretName),
        workload: (secretKey, resourceVersion, config) => {
          cluster = `${secretKey}@${resourceVersion}`
          return this.workload(secretKey, resourceVersion, config, limits)
        },
        pendingPods: (api) => round.pendingPods(cluster, () => this.listPending(cluster, api)),
        tracker: (k) => this.tracker(k),
        windows: this.deps.windows,
        permittedNodeKeys: this.deps.permittedNodeKeys ?? [],
        ...(this.deps.physicalGpus !== undefined ? { physicalGpus: this.deps.physicalGpus } : {}),
        clock: () => new Date(this.deps.clock.now())
      })
      cancelDeadline()
      const overran = pass.signal.aborted
      if (overran) metrics.errors.inc({ reason: 'PassDeadline' })
      await this.record(key, namespace, name, report, overran)
      if (report.errors.length > 0 && !overran) this.queue.retry(key)
      else this.queue.forget(key)
    } catch (error) {
      metrics.errors.inc({ reason: 'Internal' })
      log.error(
        { cellNodeSet: key, err: error instanceof Error ? { message: error.message, stack: error.stack } : String(error) },
        'pass failed'
      )
      this.queue.retry(key)
    } finally {
      cancelDeadline()
      end()
      this.queue.done(key)
    }
  }

  /** Lists a cluster's unbound pending Pods; a list cut at a bound is counted and logged, once per round. */
  private async listPending(cluster: string, api: WorkloadApi): Promise<PodList> {
    const list = await listPendingPods(api, this.deps.bounds.maxPendingPods)
    if (list.truncated === true) {
      this.deps.metrics.errors.inc({ reason: 'PendingPodsTruncated' })
      this.deps.log.warn(
        { cluster: cluster.slice(0, cluster.lastIndexOf('@')), listed: list.items.length, max: this.deps.bounds.maxPendingPods },
        'pending Pods truncated: only those listed count as demand'
      )
    }
    return list
  }

  /**
   * Logs a pass, counts it in the metrics, exports its pool's series (while this replica may act)
   * and writes the Events its change of status tells.
   */
  private async record(key: string, namespace: string, name: string, report: PassReport, overran = false): Promise<void> {
    const { log, metrics } = this.deps
    const { observed, ...logged } = report
    for (const error of report.errors) metrics.errors.inc({ reason: error.reason })
    if (!report.served) {
      // A CellNodeSet whose pool is gone (or another agent's) is not this agent's to report on.
      this.told.delete(key)
      metrics.setReachable(namespace, name, undefined)
      metrics.setPool(namespace, name, undefined)
      // Not served is the normal answer for a CellNodeSet of another agent's pool; a failed read of its pool is not.
      log[report.errors.length > 0 ? 'warn' : 'debug']({ cellNodeSet: key, why: report.notServed, errors: report.errors }, 'not served')
      return
    }
    if (this.deps.active()) {
      metrics.setReachable(namespace, name, report.reachable)
      if (observed !== undefined) metrics.setPool(namespace, name, poolGauges(observed.pool, observed.after))
    }
    if (report.reachable !== 'Reachable' && report.reachable !== undefined) metrics.errors.inc({ reason: report.reachable })
    if (report.nodeWrites.patch > 0) metrics.nodeWrites.inc({ action: 'patch' }, report.nodeWrites.patch)
    if (report.nodeWrites.delete > 0) metrics.nodeWrites.inc({ action: 'delete' }, report.nodeWrites.delete)
    const level =
      overran || report.errors.length > 0 || report.reachable !== 'Reachable' || report.statusProblems !== undefined ? 'warn' : 'debug'
    log[level]({ cellNodeSet: key, ...logged, ...(overran ? { overran: true } : {}) }, 'pass')
    if (observed !== undefined) await this.tell(key, namespace, observed)
  }

  /**
   * Writes the Events of one pass about its pool, within the limits: a new one is created, one
   * that happened shortly before is counted on the Event already written (created anew if that
   * one is gone). A failed write is counted and logged, never retried.
   */
  private async tell(key: string, namespace: string, observed: NonNullable<PassReport['observed']>): Promise<void> {
    const { infra, log, metrics, clock } = this.deps
    const metadata = ownValue(observed.pool, 'metadata')
    const uid = ownValue(metadata, 'uid')
    const poolName = ownValue(metadata, 'name')
    if (typeof uid !== 'string' || typeof poolName !== 'string') return
    // The status this process last saw after a pass is a truer "before" than the informer's copy,
    // which may not have caught up with that pass's write yet.
    const before = this.told.get(key) ?? observed.before
    this.told.set(key, observed.after)
    for (const event of poolEvents(observed.nodes, before, observed.after)) {
      const eventKey = { objectUid: uid, ...event }
      const admission = this.limiter.admit(eventKey, clock.now())
      if (admission.action === 'limited') {
        metrics.events.inc({ reason: event.reason, result: 'limited' })
        continue
      }
      const now = new Date(clock.now())
      try {
        if (admission.action === 'recount' && (await this.recount(namespace, admission.name, admission.count, now))) {
          this.limiter.wrote(eventKey, admission.name, admission.count, clock.now())
          metrics.events.inc({ reason: event.reason, result: 'counted' })
          continue
        }
        const name = await infra.poolEvent({ namespace, name: poolName, uid }, event.type, event.reason, event.message, now)
        if (name !== undefined) this.limiter.wrote(eventKey, name, 1, clock.now())
        metrics.events.inc({ reason: event.reason, result: 'created' })
      } catch (error) {
        metrics.events.inc({ reason: event.reason, result: 'failed' })
        metrics.errors.inc({ reason: 'EventWrite' })
        log.warn(
          { cellNodeSet: key, event: event.reason, err: error instanceof Error ? error.message : String(error) },
          'event not written'
        )
      }
    }
  }

  /** Counts an occurrence on the Event `name`; false when that Event is gone (expired), so a new one is made. */
  private async recount(namespace: string, name: string, count: number, now: Date): Promise<boolean> {
    try {
      await this.deps.infra.recountEvent(namespace, name, count, now)
      return true
    } catch (error) {
      if (statusCode(error) === 404) return false
      throw error
    }
  }

  /** This replica stopped leading: the series of what it served are the next leader's to export. */
  standDown(): void {
    this.deps.metrics.clearServed()
    this.told.clear()
  }

  private workload(secretKey: string, resourceVersion: string, config: ReducedKubeconfig, limits: ReadLimits): WorkloadApi {
    const { client, built } = this.clients.get(secretKey, resourceVersion, config)
    if (built) this.deps.log.info({ secret: secretKey, resourceVersion }, 'workload cluster client built from the kubeconfig Secret')
    return abandonOn(client.api(limits), limits.signal)
  }

  private tracker(key: string): HeartbeatTracker {
    let tracker = this.trackers.get(key)
    if (tracker === undefined) this.trackers.set(key, (tracker = new HeartbeatTracker(this.deps.windows.startupMs)))
    return tracker
  }
}
