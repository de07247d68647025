/**
 * The agent's work queue: keys (`namespace/name` of a CellNodeSet) waiting for a pass, in the
 * manner of client-go's rate-limited work queue.
 *
 * - **Dedup.** A key is queued at most once: adding a queued key does nothing. A key added while
 *   its pass runs is queued again when that pass is done, so a change seen during a pass always
 *   gets a pass of its own, and no key ever runs twice at once.
 * - **Retry with backoff.** `retry(key)` queues the key again after a delay that doubles with each
 *   failure of that key (from `baseMs` up to `maxMs`); `forget(key)` after a pass that went well
 *   resets it. A pass that failed is so tried again sooner than the next resync, and a key that
 *   keeps failing costs at most one pass per `maxMs`.
 * - **Shutdown drain.** `shutDown()` takes no more work: queued and delayed keys are dropped,
 *   `get()` answers `undefined`, and `drain()` resolves once the passes in progress are done. The
 *   queue itself is not worked off (client-go's drain does that): a stopping agent finishes the
 *   pass it is in and leaves the rest to the replica that takes the Lease, which resyncs every
 *   key when it starts.
 *
 * - **Taken by choice.** Besides `get()`, which hands out keys in order, `take(eligible)` takes
 *   the first queued key a scheduler may start now (lanes.ts: one pass per workload cluster at a
 *   time), and `onQueued` tells it that a key became available.
 *
 * Timers come from the injected clock.
 */
import type { Clock } from './clock.ts'

/** How the delay of a retried key grows. */
export interface Backoff {
  /** The delay after the first failure (ms). */
  baseMs: number
  /** The longest delay (ms). */
  maxMs: number
}

/** 1 s, doubling, at most 15 s (the default resync period: a failed pass is never retried later than a resync would run it). */
export const DEFAULT_BACKOFF: Backoff = { baseMs: 1000, maxMs: 15_000 }

/** A deduplicating FIFO of keys with delayed retries. */
export class WorkQueue {
  private readonly queue: string[] = []
  /** Keys waiting for a pass: queued, or added again while their pass runs. */
  private readonly dirty = new Set<string>()
  private readonly processing = new Set<string>()
  private readonly failures = new Map<string, number>()
  private readonly delayed = new Map<string, () => void>()
  private readonly takers: Array<(key: string | undefined) => void> = []
  private readonly drainers: Array<() => void> = []
  private stopped = false
  /** Called whenever a key becomes available to take (lanes.ts schedules from it). */
  onQueued: () => void = () => {}

  constructor(
    private readonly clock: Clock,
    private readonly backoff: Backoff = DEFAULT_BACKOFF
  ) {}

  /** Queues `key` unless it is already waiting; after shutdown, does nothing. */
  add(key: string): void {
    if (this.stopped || this.dirty.has(key)) return
    this.dirty.add(key)
    if (this.processing.has(key)) return
    this.queue.push(key)
    this.handOut()
    this.onQueued()
  }

  /** Queues `key` after `ms`. A key already waiting for a later time keeps the earlier one. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return
    if (ms <= 0) return this.add(key)
    if (this.delayed.has(key)) return
    const cancel = this.clock.after(ms, () => {
      this.delayed.delete(key)
      this.add(key)
    })
    this.delayed.set(key, cancel)
  }

  /** Queues `key` again after its backoff delay, and returns that delay (ms). */
  retry(key: string): number {
    const failures = (this.failures.get(key) ?? 0) + 1
    this.failures.set(key, failures)
    const delay = Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** Math.min(failures - 1, 30))
    this.addAfter(key, delay)
    return delay
  }

  /** Forgets the failures of `key`: its next retry waits `baseMs` again. */
  forget(key: string): void {
    this.failures.delete(key)
  }

  /** How many times `key` was retried since it was last forgotten. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0
  }

  /** The next key to work on, once there is one; `undefined` once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.stopped) return Promise.resolve(undefined)
    const key = this.takeNext()
    if (key !== undefined) return Promise.resolve(key)
    return new Promise((resolve) => this.takers.push(resolve))
  }

  /** Takes the first queued key for which `eligible` holds (now, without waiting), or none. */
  take(eligible: (key: string) => boolean): string | undefined {
    if (this.stopped) return undefined
    const index = this.queue.findIndex(eligible)
    if (index < 0) return undefined
    const [key] = this.queue.splice(index, 1) as [string]
    this.dirty.delete(key)
    this.processing.add(key)
    return key
  }

  /** Ends the pass of `key`; a key added meanwhile is queued now. */
  done(key: string): void {
    this.processing.delete(key)
    if (!this.stopped && this.dirty.has(key)) {
      this.queue.push(key)
      this.handOut()
      this.onQueued()
    }
    if (this.processing.size === 0) for (const drained of this.drainers.splice(0)) drained()
  }

  /** Keys queued now (not those in a pass, nor those waiting for a delay). */
  get length(): number {
    return this.queue.length
  }

  /** Takes no more work: drops what is queued or delayed, and answers `undefined` to every `get()`. */
  shutDown(): void {
    if (this.stopped) return
    this.stopped = true
    this.queue.length = 0
    this.dirty.clear()
    for (const cancel of this.delayed.values()) cancel()
    this.delayed.clear()
    for (const taker of this.takers.splice(0)) taker(undefined)
  }

  /** Resolves once no pass is in progress. */
  drain(): Promise<void> {
    if (this.processing.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.drainers.push(resolve))
  }

  private takeNext(): string | undefined {
    const key = this.queue.shift()
    if (key === undefined) return undefined
    this.dirty.delete(key)
    this.processing.add(key)
    return key
  }

  private handOut(): void {
    while (this.takers.length > 0 && this.queue.length > 0) {
      const taker = this.takers.shift() as (key: string | undefined) => void
      taker(this.takeNext())
    }
  }
}
