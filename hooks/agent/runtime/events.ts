/**
 * Kubernetes Events from the agent: `core/v1` Events about an object of the infrastructure
 * cluster, with the agent as their source.
 *
 * Every Event the agent writes goes through one recorder, so an Event is one `record` call at the
 * place that knows it happened: the Warning of a deleting CellNodeSet that lets go of Nodes it
 * could not sweep (pass.ts), and the story of each pool (pool-events.ts, told by controller.ts).
 * An Event that happens again soon is counted on the Event already written (`count` and
 * `lastTimestamp`, as client-go's Event correlator does; event-limiter.ts decides when), so
 * `kubectl describe` shows it once, "x2".
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type CoreV1Event, type KubeConfig } from '@kubernetes/client-node'
import { deadline } from './clock.ts'
import type { EventType } from '../model/apis.ts'

/** The `source.component` of the agent's Events. */
export const EVENT_SOURCE = 'gpuhooks-workload-agent'
/** The longest message an Event carries; longer ones are cut. */
export const MAX_EVENT_MESSAGE = 1000

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion: string
  kind: string
  namespace: string
  name: string
  uid: string
}

/** Writes Events; a failure rejects, and the caller reports it. */
export interface EventRecorder {
  /** Creates an Event; resolves with the name the API server gave it. */
  record(object: InvolvedObject, type: EventType, reason: string, message: string, now: Date): Promise<string | undefined>
  /** Counts one more occurrence on the Event `name`: its `count` and `lastTimestamp`. */
  recount(namespace: string, name: string, count: number, now: Date): Promise<void>
}

/** The merge patch that counts an Event again. */
export function recountPatch(count: number, now: Date): { count: number; lastTimestamp: string } {
  return { count, lastTimestamp: new Date(now.getTime()).toISOString().replace(/\.\d{3}Z$/, 'Z') }
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)

/** The Event as written: named after its object (`generateName`), in the object's namespace, first and last seen `now`. */
export function eventBody(object: InvolvedObject, type: EventType, reason: string, message: string, now: Date): CoreV1Event {
  const time = new Date(now.getTime())
  return {
    metadata: { generateName: `${object.name}.`, namespace: object.namespace },
    involvedObject: { ...object },
    type,
    reason,
    message: message.slice(0, MAX_EVENT_MESSAGE),
    source: { component: EVENT_SOURCE },
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1
  }
}

/** Events through client-node; each write gets `timeoutMs`. */
export function eventRecorder(kc: KubeConfig, timeoutMs: number): EventRecorder {
  const core = kc.makeApiClient(CoreV1Api)
  return {
    async record(object, type, reason, message, now) {
      const created = await deadline(
        `create Event on ${object.kind} ${object.namespace}/${object.name}`,
        core.createNamespacedEvent({ namespace: object.namespace, body: eventBody(object, type, reason, message, now) }),
        timeoutMs
      )
      return created.metadata?.name
    },
    async recount(namespace, name, count, now) {
      await deadline(
        `patch Event ${namespace}/${name}`,
        core.patchNamespacedEvent({ namespace, name, body: recountPatch(count, now) }, merge),
        timeoutMs
      )
    }
  }
}
