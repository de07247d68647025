/**
 * A clock the test moves by hand (hooks/agent/runtime/clock.ts): time stands still until `advance`, which
 * runs every timer that falls due, in time order, and lets the promises they start run to the
 * next wait. Nothing in a test that uses it depends on how fast the machine is.
 */
import type { Clock } from '../../hooks/agent/runtime/clock.ts'

interface Timer {
  at: number
  seq: number
  run: () => void
}

/** Lets every pending promise chain run until it waits on a timer or on I/O. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

export class FakeClock implements Clock {
  private timers: Timer[] = []
  private seq = 0

  constructor(public time: number = Date.parse('2026-06-01T00:00:00Z')) {}

  now(): number {
    return this.time
  }

  after(ms: number, run: () => void): () => void {
    const timer: Timer = { at: this.time + Math.max(0, ms), seq: this.seq++, run }
    this.timers.push(timer)
    return () => {
      this.timers = this.timers.filter((t) => t !== timer)
    }
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.timers.length
  }

  /** Moves time forward by `ms`, running each timer as its time comes, with the promises it starts. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms
    for (;;) {
      const next = [...this.timers].sort((a, b) => a.at - b.at || a.seq - b.seq)[0]
      if (next === undefined || next.at > end) break
      this.timers = this.timers.filter((t) => t !== next)
      this.time = next.at
      next.run()
      await settle()
    }
    this.time = end
    await settle()
  }
}
