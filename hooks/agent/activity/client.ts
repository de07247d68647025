/**
 * What the activity controller does in the infrastructure cluster, through client-node, each call
 * with a deadline: read an Instance and a Pod by name, patch an Instance (a JSON patch that tests
 * its uid and resourceVersion), merge-patch an InstanceActivity's status subresource, and write
 * Events on Instances through the agent's recorder (runtime/events.ts). Exactly what
 * deploy/agent-rbac/infrastructure-cluster.yaml grants it.
 */
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node'
import { WORKER_API_VERSION } from '../../api/instance.ts'
import type { InstanceActivityStatus } from '../../api/instanceactivity.ts'
import { deadline } from '../runtime/clock.ts'
import { eventRecorder, type InvolvedObject } from '../runtime/events.ts'
import { plain, statusCode } from '../runtime/clients.ts'
import type { PatchOp } from './decide.ts'

/** The activity controller's calls. */
export interface ActivityApi {
  /** The Instance, or undefined when there is none. */
  getInstance(namespace: string, name: string): Promise<unknown>
  /** The Pod, or undefined when there is none. */
  getPod(namespace: string, name: string): Promise<unknown>
  /** A JSON patch of the Instance (its operations test what they depend on). */
  patchInstance(namespace: string, name: string, patch: PatchOp[]): Promise<void>
  /** A merge patch of the InstanceActivity's status subresource. */
  patchStatus(namespace: string, name: string, status: InstanceActivityStatus): Promise<void>
  /** A Normal Event on an Instance; resolves with its name. */
  event(instance: { namespace: string; name: string; uid: string }, reason: string, message: string, now: Date): Promise<string | undefined>
  /** Counts one more occurrence on an Event already written. */
  recountEvent(namespace: string, name: string, count: number, now: Date): Promise<void>
}

const [GROUP, VERSION] = WORKER_API_VERSION.split('/') as [string, string]
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch)
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)

/** The calls through client-node; each gets `timeoutMs`. */
export function activityApi(kc: KubeConfig, timeoutMs: number): ActivityApi {
  const custom = kc.makeApiClient(CustomObjectsApi)
  const core = kc.makeApiClient(CoreV1Api)
  const events = eventRecorder(kc, timeoutMs)
  const orNothing = async (what: string, call: () => Promise<unknown>): Promise<unknown> => {
    try {
      return plain(await deadline(what, call(), timeoutMs))
    } catch (error) {
      if (statusCode(error) === 404) return undefined
      throw error
    }
  }
  return {
    getInstance: (namespace, name) =>
      orNothing(`get Instance ${namespace}/${name}`, () =>
        custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'instances', name })
      ),
    getPod: (namespace, name) => orNothing(`get Pod ${namespace}/${name}`, () => core.readNamespacedPod({ namespace, name })),
    async patchInstance(namespace, name, patch) {
      await deadline(
        `patch Instance ${namespace}/${name}`,
        custom.patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace, plural: 'instances', name, body: patch },
          jsonPatch
        ),
        timeoutMs
      )
    },
    async patchStatus(namespace, name, status) {
      await deadline(
        `patch InstanceActivity ${namespace}/${name} status`,
        custom.patchNamespacedCustomObjectStatus(
          { group: GROUP, version: VERSION, namespace, plural: 'instanceactivities', name, body: { status } },
          mergePatch
        ),
        timeoutMs
      )
    },
    event(instance, reason, message, now) {
      const involved: InvolvedObject = { ...instance, apiVersion: WORKER_API_VERSION, kind: 'Instance' }
      return events.record(involved, 'Normal', reason, message, now)
    },
    recountEvent: (namespace, name, count, now) => events.recount(namespace, name, count, now)
  }
}
