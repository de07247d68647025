/**
 * Whether a Node's kubelet is still alive, judged by the agent's own clock (docs/workload.md, "live").
 *
 * A VM's clock may be skewed, so a kubelet's timestamps are never compared with the agent's
 * clock: the agent only notes, by its own clock, when it last saw a value change. A Lease's
 * `renewTime` unchanged for 90 s (kubelets renew every 10 s), or, without a readable Lease, the
 * Ready condition's `lastHeartbeatTime` unchanged for 6 minutes, means not live. Everything else
 * is live, including a Node the agent has watched for less than 90 s: a restarted agent deletes
 * nothing in its first 90 s.
 */
import type { LivenessWindows, NodeHeartbeats, Sighting } from '../../model/observed.ts'

/** docs/workload.md's windows. */
export const DEFAULT_WINDOWS: LivenessWindows = { leaseMs: 90_000, heartbeatMs: 360_000, startupMs: 90_000 }

/** True while the Node's kubelet may still be alive. `now` is the agent's clock in ms. */
export function isLive(beats: NodeHeartbeats, now: number, windows: LivenessWindows = DEFAULT_WINDOWS): boolean {
  if (now - beats.watchedSince < windows.startupMs) return true
  if (beats.lease !== undefined) return now - beats.lease.changedAt < windows.leaseMs
  if (beats.heartbeat !== undefined) return now - beats.heartbeat.changedAt < windows.heartbeatMs
  return true
}

/**
 * Remembers, per Node, when the agent first saw it and when its Lease renewTime and Ready
 * heartbeat last changed. One per workload cluster client: a new client (a rotated kubeconfig)
 * starts watching afresh, which only delays a sweep.
 */
export class HeartbeatTracker {
  private readonly nodes = new Map<string, NodeHeartbeats & { lastSeen: number }>()

  /**
   * `maxGapMs`: a Node not observed for longer than this is watched afresh. A gap means the agent
   * was not looking (a standby that becomes leader again, a kubeconfig that was unusable for a
   * while): a Lease that aged meanwhile was not seen unchanged, only not seen.
   */
  constructor(private readonly maxGapMs: number = DEFAULT_WINDOWS.startupMs) {}

  /**
   * Records one observation of `node` and returns what the liveness rule needs. `lease` is
   * undefined when the Lease was not readable (no Lease, or the list failed), `heartbeat` when
   * the Node has no Ready heartbeat.
   */
  observe(node: string, lease: string | undefined, heartbeat: string | undefined, now: number): NodeHeartbeats {
    const last = this.nodes.get(node)
    const before = last !== undefined && now - last.lastSeen <= this.maxGapMs ? last : undefined
    const next: NodeHeartbeats = { watchedSince: before?.watchedSince ?? now }
    const sighting = (value: string | undefined, previous: Sighting | undefined): Sighting | undefined => {
      if (value === undefined) return undefined
      return previous !== undefined && previous.value === value ? previous : { value, changedAt: now }
    }
    const leaseSighting = sighting(lease, before?.lease)
    const heartbeatSighting = sighting(heartbeat, before?.heartbeat)
    if (leaseSighting !== undefined) next.lease = leaseSighting
    if (heartbeatSighting !== undefined) next.heartbeat = heartbeatSighting
    this.nodes.set(node, { ...next, lastSeen: now })
    return next
  }

  /** Forgets Nodes not in `present`, so a Node deleted and registered again is watched afresh. */
  retain(present: ReadonlySet<string>): void {
    for (const name of [...this.nodes.keys()]) if (!present.has(name)) this.nodes.delete(name)
  }
}
