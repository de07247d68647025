/**
 * Carries out the core's actions (style rule 13: the I/O after the decision).
 *
 * Node actions go to the workload cluster: merge patches, and deletions guarded by the Node's uid
 * and resourceVersion, so a Node that changed since the snapshot (its kubelet came back) is not
 * deleted. A failed action is reported and left for the next pass; nothing is retried here.
 */
import type { SweptNode } from '../../api/cellnodeset.ts'
import { apiTime } from '../../k8s/time.ts'
import type { WorkloadApi } from '../model/apis.ts'
import { statusCode } from '../runtime/clients.ts'
import type { Action } from '../model/observed.ts'
import { errorText } from '../workload/reachability.ts'

/** What happened to the Node actions of one pass. */
export interface NodeOutcome {
  /** Actions carried out. */
  done: Action[]
  /** Actions that failed, with the error text. */
  failed: { action: Action; error: string; code?: number }[]
  /** The Nodes deleted, as `swept` records them. */
  swept: SweptNode[]
}

/** Carries out the patchNode and deleteNode actions, in order. */
export async function applyNodeActions(api: WorkloadApi, actions: readonly Action[], now: () => Date): Promise<NodeOutcome> {
  const outcome: NodeOutcome = { done: [], failed: [], swept: [] }
  for (const action of actions) {
    try {
      if (action.type === 'patchNode') {
        await api.patchNode(action.name, action.patch)
      } else if (action.type === 'deleteNode') {
        await api.deleteNode(action.name, { uid: action.uid, resourceVersion: action.resourceVersion })
        outcome.swept.push({
          name: action.name,
          instance: action.instance,
          reason: action.reason,
          time: apiTime(now())
        })
      } else {
        continue
      }
      outcome.done.push(action)
    } catch (error) {
      const code = statusCode(error)
      // Someone else deleted the Node first: nothing left to do, and nothing the agent swept.
      if (action.type === 'deleteNode' && code === 404) continue
      outcome.failed.push(code === undefined ? { action, error: errorText(error) } : { action, error: errorText(error), code })
    }
  }
  return outcome
}
