/**
 * The agent's clock, passed to every part that waits or stamps a time (the work queue, the
 * controller loop, the leader election loop), so that each can be tested by moving a fake clock
 * instead of waiting (style rule 16).
 */

/** Time and timers. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** Runs `run` once after `ms`; the returned function cancels it. */
  after(ms: number, run: () => void): () => void
}

/** The process clock: `Date.now` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, run) {
    const timer = setTimeout(run, ms)
    return () => clearTimeout(timer)
  }
}

/**
 * A wait that ends after `ms`, or sooner when `wake` is called: the loops sleep between rounds
 * and are woken by the event that makes waiting pointless (new work, a leadership change, stop).
 */
export class Sleeper {
  private wakeUp: (() => void) | undefined

  constructor(private readonly clock: Clock) {}

  /** Resolves after `ms`, or at the next `wake()`. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        cancel()
        this.wakeUp = undefined
        resolve()
      }
      const cancel = this.clock.after(ms, done)
      this.wakeUp = done
    })
  }

  /** Ends the current sleep, if any. */
  wake(): void {
    this.wakeUp?.()
  }
}

/** Runs `call` with a deadline of `ms`; the error of a late call names what timed out. */
export async function deadline<T>(what: string, call: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([call, timeout])
  } finally {
    clearTimeout(timer)
  }
}
