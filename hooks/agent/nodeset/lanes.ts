/**
 * The CellNodeSet controller's scheduler (docs/workload.md, "Bounds"): passes run in lanes, one
 * lane per workload cluster as the agent knows it (a kubeconfig Secret), so that a slow or
 * hostile server holds only the pools that name it.
 *
 * - A lane runs one pass at a time; up to `workers` lanes run at once, and at most
 *   `namespaceWorkers` of them for one namespace (a namespace's authors, however many Secrets
 *   they label, hold at most that many workers).
 * - A lane, once started, runs the passes of its keys queued meanwhile too, each at most once,
 *   sharing one round (`newRound`: the pending Pod list of its cluster, its Secret), then frees
 *   its worker.
 * - Keys are taken from the work queue only when their lane may start: a key whose lane is busy
 *   or whose namespace is at its bound waits, in its place, while others go ahead.
 * - Nothing starts while `active()` is false (not leading, informers not synced); the scheduler
 *   looks again every {@link INACTIVE_POLL_MS} or when woken. A lane whose replica stops being
 *   active gives its keys back.
 *
 * Each pass's own deadline is the controller's (controller.ts); the scheduler only decides what
 * runs. Timers come from the injected clock.
 */
import type { Clock } from '../runtime/clock.ts'
import { INACTIVE_POLL_MS } from '../runtime/loop.ts'
import type { WorkQueue } from '../runtime/queue.ts'

/** Where a key runs: its lane (a workload cluster) and the namespace that bounds it. */
export interface Lane {
  lane: string
  namespace: string
}

/** What the scheduler works with; `R` is what the passes of one lane's round share. */
export interface LaneDeps<R> {
  queue: WorkQueue
  clock: Clock
  resyncMs: number
  workers: number
  namespaceWorkers: number
  active(): boolean
  /** The lane of a key, read when the key is about to run. */
  laneOf(key: string): Lane
  /** Queues every object in the cache (every `resyncMs`). */
  resync(): void
  /** What a lane's passes share, made when the lane starts. */
  newRound(lane: Lane): R
  /** One pass for `key`; it calls `queue.done(key)`. */
  process(key: string, round: R): Promise<void>
}

/** Runs the passes of queued keys in lanes. */
export class LaneScheduler<R> {
  /** The running lanes, with the key each is passing now. */
  private readonly running = new Map<string, { namespace: string; key: string }>()
  private readonly perNamespace = new Map<string, number>()
  private stopping = false
  private dispatchQueued = false
  private cancelPoll: (() => void) | undefined
  private cancelResync: () => void = () => {}
  private ended: (() => void) | undefined

  constructor(private readonly deps: LaneDeps<R>) {}

  /** The keys whose passes run now. */
  get passing(): string[] {
    return [...this.running.values()].map((r) => r.key)
  }

  /** Starts scheduling; resolves once stopped and every lane has ended. */
  run(): Promise<void> {
    this.deps.queue.onQueued = () => this.wake()
    const resync = (): void => {
      this.deps.resync()
      this.cancelResync = this.deps.clock.after(this.deps.resyncMs, resync)
    }
    resync()
    this.wake()
    return new Promise((resolve) => {
      this.ended = resolve
      this.endIfIdle()
    })
  }

  /** Looks again at once whether lanes may start (a key queued, a lane ended, leadership gained). */
  wake(): void {
    if (this.dispatchQueued) return
    this.dispatchQueued = true
    queueMicrotask(() => {
      this.dispatchQueued = false
      this.dispatch()
    })
  }

  /** Starts no more passes; the lanes end after the pass each is in. */
  stop(): void {
    this.stopping = true
    this.cancelResync()
    this.cancelPoll?.()
    this.endIfIdle()
  }

  private dispatch(): void {
    if (this.stopping) return
    if (!this.deps.active()) {
      if (this.cancelPoll === undefined && this.deps.queue.length > 0) {
        this.cancelPoll = this.deps.clock.after(INACTIVE_POLL_MS, () => {
          this.cancelPoll = undefined
          this.dispatch()
        })
      }
      return
    }
    while (this.running.size < this.deps.workers) {
      const lanes = new Map<string, Lane>()
      const laneOf = (key: string): Lane => {
        let lane = lanes.get(key)
        if (lane === undefined) lanes.set(key, (lane = this.deps.laneOf(key)))
        return lane
      }
      const key = this.deps.queue.take((k) => this.mayStart(laneOf(k)))
      if (key === undefined) return
      void this.runLane(laneOf(key), key)
    }
  }

  private mayStart(lane: Lane): boolean {
    return !this.running.has(lane.lane) && (this.perNamespace.get(lane.namespace) ?? 0) < this.deps.namespaceWorkers
  }

  /** Runs `first`, then the lane's keys queued meanwhile, each once, while it may act. */
  private async runLane(lane: Lane, first: string): Promise<void> {
    this.running.set(lane.lane, { namespace: lane.namespace, key: first })
    this.perNamespace.set(lane.namespace, (this.perNamespace.get(lane.namespace) ?? 0) + 1)
    const round = this.deps.newRound(lane)
    const ran = new Set<string>()
    let key: string | undefined = first
    try {
      while (key !== undefined) {
        if (this.stopping || !this.deps.active()) {
          // Leadership went (or the agent stops) while the lane ran: the key waits for the next round.
          this.deps.queue.done(key)
          if (!this.stopping) this.deps.queue.add(key)
          break
        }
        this.running.set(lane.lane, { namespace: lane.namespace, key })
        ran.add(key)
        await this.deps.process(key, round)
        key = this.deps.queue.take((k) => !ran.has(k) && this.deps.laneOf(k).lane === lane.lane)
      }
    } finally {
      this.running.delete(lane.lane)
      const left = (this.perNamespace.get(lane.namespace) ?? 1) - 1
      if (left > 0) this.perNamespace.set(lane.namespace, left)
      else this.perNamespace.delete(lane.namespace)
      this.endIfIdle()
      this.wake()
    }
  }

  private endIfIdle(): void {
    if (this.stopping && this.running.size === 0) this.ended?.()
  }
}
