/**
 * The CellInfrastructure controller's loop (style rule 16; sample-controller's `Run` and
 * `processNextWorkItem`): a resync that queues every cached object every `resyncMs`, and one
 * pass per queued key, one at a time, only while `active()` (this replica leads, or runs alone,
 * and the informers have synced). Keys added meanwhile wait in the queue, once each. Its passes
 * talk to the infrastructure cluster only; the CellNodeSet controller, whose passes talk to
 * workload clusters that pool authors name, runs them in lanes instead (lanes.ts).
 */
import type { Clock, Sleeper } from './clock.ts'
import type { WorkQueue } from './queue.ts'

/** While it may not act, the loop looks again this often (ms), or at once when woken. */
export const INACTIVE_POLL_MS = 1000

/** What {@link runKeyLoop} works with. */
export interface KeyLoop {
  queue: WorkQueue
  sleeper: Sleeper
  clock: Clock
  resyncMs: number
  active(): boolean
  stopping(): boolean
  /** Queues every object in the cache. */
  resync(): void
  /** One pass for `key`; it calls `queue.done(key)`. */
  process(key: string): Promise<void>
}

/** Runs the loop until the queue shuts down. */
export async function runKeyLoop(loop: KeyLoop): Promise<void> {
  let cancelResync = (): void => {}
  const resync = (): void => {
    loop.resync()
    cancelResync = loop.clock.after(loop.resyncMs, resync)
  }
  resync()
  try {
    while (!loop.stopping()) {
      if (!loop.active()) {
        await loop.sleeper.sleep(INACTIVE_POLL_MS)
        continue
      }
      const key = await loop.queue.get()
      if (key === undefined) break
      if (!loop.active()) {
        // Leadership went while the loop waited for work: the key waits for the next leader round.
        loop.queue.done(key)
        loop.queue.add(key)
        continue
      }
      await loop.process(key)
    }
  } finally {
    cancelResync()
  }
}
