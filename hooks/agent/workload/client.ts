/**
 * The workload cluster's API as the agent uses it (clients.ts, `WorkloadApi`), over the bounded
 * transport of http.ts: a connection per kubeconfig Secret, bound to one pass's limits
 * (its signal and byte budget) at the start of each pass.
 */
import type { WorkloadApi } from '../model/apis.ts'
import type { ReducedKubeconfig } from './kubeconfig.ts'
import { workloadHttp, WorkloadHttpError, type ReadLimits, type TransportSettings, type WorkloadHttp } from './http.ts'

/** A workload cluster's connection: its API for one pass's limits, and a close for its sockets. */
export interface WorkloadConnection {
  api(limits: ReadLimits): WorkloadApi
  close(): void
}

const NODES = '/api/v1/nodes'
const NODE_LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases'
const RESOURCE = '/apis/resource.k8s.io/v1'

/** The items of a page and the token of the next one, if any. */
function pageOf(what: string, answer: unknown): { items: unknown[]; continue?: string } {
  const metadata = typeof answer === 'object' && answer !== null ? (answer as { metadata?: unknown }).metadata : undefined
  const next = typeof metadata === 'object' && metadata !== null ? (metadata as { continue?: unknown }).continue : undefined
  const items = itemsOf(what, answer)
  return typeof next === 'string' && next !== '' ? { items, continue: next } : { items }
}

/** The items of a list answer; anything else is not a list. */
function itemsOf(what: string, answer: unknown): unknown[] {
  const items = typeof answer === 'object' && answer !== null ? (answer as { items?: unknown }).items : undefined
  if (items === null || items === undefined) return []
  if (!Array.isArray(items)) throw new WorkloadHttpError(`${what}: the answer is not a list`)
  return items
}

/** The connection to the workload cluster of a reduced kubeconfig. */
export function workloadConnection(config: ReducedKubeconfig, settings: TransportSettings): WorkloadConnection {
  const http: WorkloadHttp = workloadHttp(config, settings)
  return {
    close: () => http.close(),
    api(limits) {
      const orUndefined = async (what: string, path: string): Promise<unknown> => {
        try {
          return await http.call({ what, method: 'GET', path }, limits)
        } catch (error) {
          if (error instanceof WorkloadHttpError && error.code === 404) return undefined
          throw error
        }
      }
      return {
        async listNodes(labelSelector) {
          const what = 'list Nodes'
          return itemsOf(what, await http.call({ what, method: 'GET', path: NODES, query: { labelSelector } }, limits))
        },
        getNode: (name) => orUndefined(`get Node ${name}`, `${NODES}/${encodeURIComponent(name)}`),
        getNodeLease: (node) => orUndefined(`get Lease kube-node-lease/${node}`, `${NODE_LEASES}/${encodeURIComponent(node)}`),
        async listPods(fieldSelector) {
          const what = `list Pods ${fieldSelector}`
          return itemsOf(what, await http.call({ what, method: 'GET', path: '/api/v1/pods', query: { fieldSelector } }, limits))
        },
        async listPodPage(fieldSelector, limit, continueToken) {
          const what = `list Pods ${fieldSelector}`
          const query = { fieldSelector, limit, continue: continueToken }
          return pageOf(what, await http.call({ what, method: 'GET', path: '/api/v1/pods', query }, limits))
        },
        async listResourceSlices(fieldSelector) {
          const what = `list ResourceSlices ${fieldSelector}`
          return itemsOf(
            what,
            await http.call({ what, method: 'GET', path: `${RESOURCE}/resourceslices`, query: { fieldSelector } }, limits)
          )
        },
        async listResourceClaimPage(limit, continueToken) {
          const what = 'list ResourceClaims'
          const query = { limit, continue: continueToken }
          return pageOf(what, await http.call({ what, method: 'GET', path: `${RESOURCE}/resourceclaims`, query }, limits))
        },
        getDeviceClass: (name) => orUndefined(`get DeviceClass ${name}`, `${RESOURCE}/deviceclasses/${encodeURIComponent(name)}`),
        async patchNode(name, patch) {
          await http.call(
            {
              what: `patch Node ${name}`,
              method: 'PATCH',
              path: `${NODES}/${encodeURIComponent(name)}`,
              body: { contentType: 'application/merge-patch+json', json: patch }
            },
            limits
          )
        },
        async deleteNode(name, preconditions) {
          await http.call(
            {
              what: `delete Node ${name}`,
              method: 'DELETE',
              path: `${NODES}/${encodeURIComponent(name)}`,
              body: { contentType: 'application/json', json: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions } }
            },
            limits
          )
        }
      }
    }
  }
}

/**
 * `api` whose every call is abandoned when `signal` aborts, whatever the call itself does with
 * it: a pass past its deadline ends at once, and its error is the signal's reason.
 */
export function abandonOn(api: WorkloadApi, signal: AbortSignal): WorkloadApi {
  const race = <T>(call: () => Promise<T>): Promise<T> => {
    if (signal.aborted) return Promise.reject(reasonOf(signal))
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(reasonOf(signal))
      signal.addEventListener('abort', onAbort, { once: true })
      call().then(
        (value) => {
          signal.removeEventListener('abort', onAbort)
          resolve(value)
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort)
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as the call failed
          reject(error)
        }
      )
    })
  }
  return {
    listNodes: (labelSelector) => race(() => api.listNodes(labelSelector)),
    getNode: (name) => race(() => api.getNode(name)),
    getNodeLease: (node) => race(() => api.getNodeLease(node)),
    listPods: (fieldSelector) => race(() => api.listPods(fieldSelector)),
    listPodPage: (fieldSelector, limit, continueToken) => race(() => api.listPodPage(fieldSelector, limit, continueToken)),
    listResourceSlices: (fieldSelector) => race(() => api.listResourceSlices(fieldSelector)),
    listResourceClaimPage: (limit, continueToken) => race(() => api.listResourceClaimPage(limit, continueToken)),
    getDeviceClass: (name) => race(() => api.getDeviceClass(name)),
    patchNode: (name, patch) => race(() => api.patchNode(name, patch)),
    deleteNode: (name, preconditions) => race(() => api.deleteNode(name, preconditions))
  }
}

function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('the pass was abandoned')
}
