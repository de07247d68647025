/**
 * Leader election on a `coordination.k8s.io` Lease, so that the chart can run two agents and only
 * one acts (docs/workload.md, "The agent process"). `@kubernetes/client-node` 1.4 has no leader
 * election, so this is a small one in client-go's manner:
 *
 * - a candidate takes the Lease when it does not exist, when it was released (no holder), or when
 *   its record (holder and renewTime) has been seen unchanged for `leaseDurationSeconds` by the
 *   candidate's own clock (clocks of two Pods are never compared);
 * - every write carries the resourceVersion read, so of two candidates racing only one wins (409
 *   for the other);
 * - the leader renews every retry period and stops acting when it has not renewed within the
 *   renew deadline (shorter than the lease duration, so it stops before another may take over);
 * - on shutdown the leader releases the Lease (empty holder), so a standby takes over at once.
 */
import type { LogTo } from '../../logger.ts'
import { isRecord } from '../../k8s/objects.ts'
import { apiMicroTime } from '../../k8s/time.ts'
import { Sleeper, type Clock } from './clock.ts'
import type { LeaseApi } from '../model/apis.ts'

/** Timings, in ms. */
export interface ElectionTimings {
  leaseDurationMs: number
  renewDeadlineMs: number
  retryPeriodMs: number
}

/** client-go's defaults. */
export const DEFAULT_TIMINGS: ElectionTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }

/** What the candidate should do after reading the Lease. */
export type LeaseStep = { do: 'create' } | { do: 'renew' } | { do: 'takeover' } | { do: 'wait'; holder: string }

interface Record_ {
  holder: string
  renewTime: string
  resourceVersion: string
  transitions: number
  acquireTime?: string
}

function readLease(lease: unknown): Record_ | undefined {
  if (!isRecord(lease)) return undefined
  const spec = isRecord(lease.spec) ? lease.spec : {}
  const metadata = isRecord(lease.metadata) ? lease.metadata : {}
  const record: Record_ = {
    holder: typeof spec.holderIdentity === 'string' ? spec.holderIdentity : '',
    renewTime: typeof spec.renewTime === 'string' ? spec.renewTime : '',
    resourceVersion: typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '',
    transitions: typeof spec.leaseTransitions === 'number' ? spec.leaseTransitions : 0
  }
  if (typeof spec.acquireTime === 'string') record.acquireTime = spec.acquireTime
  return record
}

/**
 * The step for `identity`, given the Lease read and when (own clock) its current record was
 * first seen. Pure.
 */
export function leaseStep(lease: unknown, identity: string, recordSeenSince: number, now: number, timings: ElectionTimings): LeaseStep {
  const record = readLease(lease)
  if (record === undefined) return { do: 'create' }
  if (record.holder === identity) return { do: 'renew' }
  if (record.holder === '') return { do: 'takeover' }
  if (now - recordSeenSince >= timings.leaseDurationMs) return { do: 'takeover' }
  return { do: 'wait', holder: record.holder }
}

/** A candidate for leadership of one Lease. */
export class LeaderElector {
  private seen: { key: string; since: number } | undefined
  private lastRenew = Number.NEGATIVE_INFINITY
  private held = false

  constructor(
    private readonly api: LeaseApi,
    readonly lease: { name: string; namespace: string },
    readonly identity: string,
    private readonly clock: () => number,
    private readonly timings: ElectionTimings = DEFAULT_TIMINGS
  ) {}

  /** True while this candidate holds the Lease and renewed it within the renew deadline. */
  isLeader(): boolean {
    return this.held && this.clock() - this.lastRenew < this.timings.renewDeadlineMs
  }

  /** One round: read the Lease and create, renew, take over or wait. Never throws. */
  async tick(): Promise<{ step: LeaseStep['do'] | 'error'; error?: string }> {
    let current: unknown
    try {
      current = await this.api.get()
    } catch (error) {
      return { step: 'error', error: (error as Error).message }
    }
    const now = this.clock()
    const record = readLease(current)
    const key = record === undefined ? '' : `${record.holder}\u0000${record.renewTime}`
    if (this.seen?.key !== key) this.seen = { key, since: now }
    const step = leaseStep(current, this.identity, this.seen.since, now, this.timings)
    const stamp = apiMicroTime(new Date(now))
    const seconds = Math.ceil(this.timings.leaseDurationMs / 1000)
    try {
      if (step.do === 'create') {
        await this.api.create({
          metadata: { ...this.lease },
          spec: { holderIdentity: this.identity, leaseDurationSeconds: seconds, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 }
        })
      } else if (step.do === 'renew' || step.do === 'takeover') {
        const r = record as Record_
        const acquire = step.do === 'takeover' ? stamp : (r.acquireTime ?? stamp)
        await this.api.replace({
          metadata: { ...this.lease, resourceVersion: r.resourceVersion },
          spec: {
            holderIdentity: this.identity,
            leaseDurationSeconds: seconds,
            acquireTime: acquire,
            renewTime: stamp,
            leaseTransitions: step.do === 'takeover' ? r.transitions + 1 : r.transitions
          }
        })
      } else {
        this.held = false
        return { step: step.do }
      }
    } catch (error) {
      return { step: 'error', error: (error as Error).message }
    }
    this.held = true
    this.lastRenew = now
    return { step: step.do }
  }

  /** Gives the Lease up (empty holder) if held, so a standby takes over at once. Never throws. */
  async release(): Promise<boolean> {
    if (!this.held) return false
    this.held = false
    try {
      const record = readLease(await this.api.get())
      if (record === undefined || record.holder !== this.identity) return false
      const stamp = apiMicroTime(new Date(this.clock()))
      await this.api.replace({
        metadata: { ...this.lease, resourceVersion: record.resourceVersion },
        spec: {
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: stamp,
          leaseTransitions: record.transitions,
          ...(record.acquireTime === undefined ? {} : { acquireTime: record.acquireTime })
        }
      })
      return true
    } catch {
      return false
    }
  }
}

/** What the election loop needs besides its elector. */
export interface CampaignOptions {
  clock: Clock
  /** The pause between two rounds (LEADER_ELECTION_RETRY_SECONDS). */
  retryMs: number
  log: LogTo<'info' | 'warn'>
  /** After every round: whether this replica leads now, and whether that changed with this round. */
  onRound(leading: boolean, changed: boolean): void
}

/**
 * The election loop: a round of `elector` every retry period until `stop()`, logging each change
 * of leadership. Giving the Lease up is the caller's next step after the loop ended (`release`),
 * so that it happens after the pass in progress, never under it.
 */
export class Campaign {
  private stopped = false
  private leading = false
  private readonly sleeper: Sleeper

  constructor(
    private readonly elector: LeaderElector,
    private readonly options: CampaignOptions
  ) {
    this.sleeper = new Sleeper(options.clock)
  }

  /** Runs rounds until `stop()`; never throws (a failed round is logged and the next one tries again). */
  async run(): Promise<void> {
    const { log } = this.options
    while (!this.stopped) {
      const result = await this.elector.tick()
      if (result.step === 'error') log.warn({ err: result.error }, 'leader election round failed')
      const leading = this.elector.isLeader()
      const changed = leading !== this.leading
      this.leading = leading
      if (changed)
        log.info(
          { identity: this.elector.identity, lease: this.elector.lease },
          leading ? 'leading: passes start' : 'not leading: passes stop'
        )
      this.options.onRound(leading, changed)
      if (this.stopped) break
      await this.sleeper.sleep(this.options.retryMs)
    }
  }

  /** Ends the loop after the round in progress, without waiting out the pause. */
  stop(): void {
    this.stopped = true
    this.sleeper.wake()
  }
}
