/**
 * Which Events a pass tells about (docs/observability.md, "Events"): a pure comparison of the
 * CellNodeSet's status before the pass (as stored) with its status after (as this pass
 * observed it), so `kubectl describe gpucellpool` tells the story of the pool's Nodes in the
 * workload cluster:
 *
 * - `DrainStarted`: a Node the spec cordons for its cell's drain is now cordoned;
 * - `DrainFinished`: a cordoned Node of a draining cell holds no GPU Pod any more (read, none, none
 *   being allocated): the cell can be removed;
 * - `Uncordoned`: a cordoned Node the spec does not cordon is schedulable again (a drain called
 *   off when the pool needs the cell after all);
 * - `NodeSwept`: the agent deleted a Node (a stale registration or an orphan), once per Node;
 * - `WorkloadClusterUnreachable` (Warning): the workload cluster could not be read, or could
 *   earlier but now for another reason (the reason named: CredentialInvalid, Forbidden,
 *   Unreachable); `WorkloadClusterReachable`: read again after that.
 *
 * A status that does not change says nothing, and the status written is the next pass's "before",
 * so a state is told once, and a pass whose status write failed tells it again only to the
 * recorder's deduplication (event-limiter.ts). Nothing here reads a clock or does I/O.
 */
import type { CellNode, CellNodeStatus, CellNodeSetStatus } from '../../../api/cellnodeset.ts'
import type { EventType } from '../../model/apis.ts'

/** One Event to write about the pool. */
export interface PoolEvent {
  type: EventType
  reason: string
  message: string
}

/** The Reachable condition's reason, or undefined when the status has none. */
function reachability(status: CellNodeSetStatus | undefined): { reason: string; message: string } | undefined {
  const condition = status?.conditions?.find((c) => c.type === 'Reachable')
  return condition === undefined ? undefined : { reason: condition.reason ?? '', message: condition.message ?? '' }
}

/** `: <what the condition says>` without its closing period, or nothing when it says nothing. */
function detail(message: string): string {
  const text = message.trim().replace(/\.+$/, '')
  return text === '' ? '' : `: ${text}`
}

function rows(status: CellNodeSetStatus | undefined): Map<string, CellNodeStatus> {
  return new Map((status?.nodes ?? []).map((row) => [row.name, row]))
}

/** Cordoned, its Pods listed, none holding or being given a device. */
function empty(row: CellNodeStatus | undefined): boolean {
  return (
    row?.present === true &&
    row.unschedulable === true &&
    row.allocations?.read === true &&
    row.allocations.pods === 0 &&
    row.allocations.inFlight !== true
  )
}

function cordoned(row: CellNodeStatus | undefined): boolean {
  return row?.present === true && row.unschedulable === true
}

function sweepWhy(reason: 'Stale' | 'Orphan'): string {
  return reason === 'Stale'
    ? 'a previous VM registered under the cell name, no longer heartbeating'
    : 'no cell of the pool names it any more and its kubelet stopped heartbeating'
}

/** The Events that the change from `before` to `after` tells, in a fixed order. */
export function poolEvents(nodes: readonly CellNode[], before: CellNodeSetStatus | undefined, after: CellNodeSetStatus): PoolEvent[] {
  const events: PoolEvent[] = []
  const was = reachability(before)
  const now = reachability(after)
  if (now !== undefined && now.reason !== 'Reachable' && now.reason !== was?.reason) {
    events.push({
      type: 'Warning',
      reason: 'WorkloadClusterUnreachable',
      message: `The workload cluster cannot be read (${now.reason})${detail(now.message)}. The pool holds still until it can.`
    })
  }
  if (now?.reason === 'Reachable' && was !== undefined && was.reason !== 'Reachable') {
    events.push({
      type: 'Normal',
      reason: 'WorkloadClusterReachable',
      message: `The workload cluster is read again (it was ${was.reason}).`
    })
  }

  const old = rows(before)
  const fresh = rows(after)
  for (const entry of [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const prev = old.get(entry.name)
    const next = fresh.get(entry.name)
    if (entry.cordon && cordoned(next) && !cordoned(prev)) {
      const pods = next?.allocations?.read === true ? `${next.allocations.pods} GPU Pods run on it` : 'its GPU Pods are not listed yet'
      events.push({ type: 'Normal', reason: 'DrainStarted', message: `Node ${entry.name} is cordoned for its cell's drain; ${pods}.` })
    }
    if (entry.cordon && empty(next) && !empty(prev)) {
      events.push({
        type: 'Normal',
        reason: 'DrainFinished',
        message: `Node ${entry.name} holds no GPU Pod any more: its cell can be removed.`
      })
    }
    if (!entry.cordon && cordoned(prev) && next?.present === true && next.unschedulable !== true) {
      events.push({ type: 'Normal', reason: 'Uncordoned', message: `Node ${entry.name} is schedulable again.` })
    }
  }

  const seen = new Set((before?.swept ?? []).map((s) => `${s.name}\u0000${s.instance ?? ''}\u0000${s.time}`))
  for (const swept of after.swept ?? []) {
    if (seen.has(`${swept.name}\u0000${swept.instance ?? ''}\u0000${swept.time}`)) continue
    const instance = swept.instance === undefined || swept.instance === '' ? '' : ` (instance ${swept.instance})`
    events.push({
      type: 'Normal',
      reason: 'NodeSwept',
      message: `Deleted Node ${swept.name}${instance} from the workload cluster: ${swept.reason}, ${sweepWhy(swept.reason)}.`
    })
  }
  return events
}
