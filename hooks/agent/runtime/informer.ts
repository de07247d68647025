/**
 * An informer kept running for the life of the agent: restarted after each error until the agent
 * stops, with its sync state for the readiness probe.
 */
import {
  CustomObjectsApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  type ObjectCache
} from '@kubernetes/client-node'
import type { Logger } from 'pino'
import { CELLS_API_VERSION } from '../../api/cellnodeset.ts'
import { WORKER_API_VERSION } from '../../api/instance.ts'

/** How long after an error the informer starts again. */
export const RESTART_MS = 3000

/** The informer's state as the pass loop and the readiness probe read it. */
export interface InformerState {
  /** A start has listed without an error: the cache holds the objects. */
  synced: () => boolean
}

/**
 * Starts `informer` and starts it again `RESTART_MS` after each error, until `stopped()`.
 *
 * A failed list is reported as an error event while the start still resolves, so a start counts
 * as synced only when no error came while it ran. Stopping the informer on shutdown aborts its
 * watch, which it reports as an error too: after `stopped()` an error is no failure, and nothing
 * is logged or started again. `schedule` runs a restart later (a timer; tests pass their own).
 */
export function startInformer(
  log: Pick<Logger, 'warn' | 'debug'>,
  what: string,
  informer: Informer<KubernetesObject>,
  onChange: (obj: KubernetesObject) => void,
  stopped: () => boolean,
  schedule: (restart: () => void) => void = (restart) => setTimeout(restart, RESTART_MS).unref()
): InformerState {
  let synced = false
  let errors = 0
  informer.on('add', onChange)
  informer.on('update', onChange)
  informer.on('delete', onChange)
  informer.on('connect', () => {
    log.debug({ informer: what }, 'watch connected')
  })
  const start = (): void => {
    if (stopped()) return
    const before = errors
    informer.start().then(
      () => {
        if (errors === before) synced = true
      },
      (error: unknown) => {
        failed(error, 'informer start failed; retrying')
      }
    )
  }
  const failed = (error: unknown, message: string): void => {
    errors += 1
    if (stopped()) return
    log.warn({ informer: what, err: String(error) }, message)
    schedule(start)
  }
  informer.on('error', (error: unknown) => {
    failed(error, 'informer stopped; restarting')
  })
  start()
  return { synced: () => synced }
}

/** An informer with its cache, as client-node's `makeInformer` makes it. */
export type CachedInformer = Informer<KubernetesObject> & ObjectCache<KubernetesObject>

/** The informer of CellNodeSets: in `namespace`, or in every namespace. */
export function cellNodeSetInformer(kc: KubeConfig, namespace: string | undefined): CachedInformer {
  return cellsInformer(kc, namespace, 'cellnodesets')
}

/** The informer of CellInfrastructures: in `namespace`, or in every namespace. */
export function cellInfrastructureInformer(kc: KubeConfig, namespace: string | undefined): CachedInformer {
  return cellsInformer(kc, namespace, 'cellinfrastructures')
}

/** The informer of one resource of the cells API group. */
function cellsInformer(kc: KubeConfig, namespace: string | undefined, plural: string): CachedInformer {
  const custom = kc.makeApiClient(CustomObjectsApi)
  const [group, version] = CELLS_API_VERSION.split('/') as [string, string]
  const resource = { group, version, plural }
  const path =
    namespace === undefined ? `/apis/${CELLS_API_VERSION}/${plural}` : `/apis/${CELLS_API_VERSION}/namespaces/${namespace}/${plural}`
  return makeInformer<KubernetesObject>(
    kc,
    path,
    () =>
      (namespace === undefined
        ? custom.listClusterCustomObject(resource)
        : custom.listNamespacedCustomObject({ ...resource, namespace })) as never
  )
}

/** The informer of InstanceActivities (worker.gpustack.ai/v1alpha1) of every namespace. */
export function instanceActivityInformer(kc: KubeConfig): CachedInformer {
  const custom = kc.makeApiClient(CustomObjectsApi)
  const [group, version] = WORKER_API_VERSION.split('/') as [string, string]
  const resource = { group, version, plural: 'instanceactivities' }
  return makeInformer<KubernetesObject>(
    kc,
    `/apis/${WORKER_API_VERSION}/instanceactivities`,
    () => custom.listClusterCustomObject(resource) as never
  )
}

/** The informer of a cluster-scoped view of resource.k8s.io/v1 (`resourceslices`, `resourceclaims` of every namespace). */
export function draInformer(kc: KubeConfig, plural: 'resourceslices' | 'resourceclaims'): CachedInformer {
  const custom = kc.makeApiClient(CustomObjectsApi)
  const resource = { group: 'resource.k8s.io', version: 'v1', plural }
  return makeInformer<KubernetesObject>(kc, `/apis/resource.k8s.io/v1/${plural}`, () => custom.listClusterCustomObject(resource) as never)
}
