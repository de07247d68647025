/**
 * What the workload side tells about a pool (request/workload.ts): whether the workload cluster is
 * observed, the rule every deletion, creation and phase clock waits on.
 */

/** What the workload side tells about the pool (observed/unobserved rule, docs/cellpool.md). */
export interface WorkloadState {
  /** Reachable=True and an observedTime less than 2 minutes before now. */
  observed: boolean
  /** `status.observedGeneration` equals the CellNodeSet's `metadata.generation`. */
  generationMatched: boolean
  /** Why it is unobserved (CellNodeSet reason, `Stale`, `NotObserved`), or `Reachable`. */
  reason: string
  message: string
}
