/**
 * The agent's view of the two clusters, as small interfaces over `@kubernetes/client-node` 1.x,
 * so that the snapshot and action layers can be tested against fakes and the process wires in
 * the real clients: the infrastructure cluster through client-node here, a workload cluster
 * through the bounded transport of workload/client.ts and workload/http.ts.
 *
 * Objects come back as plain JSON: client-node deserializes typed responses into class instances
 * with `Date` fields, and the core reads JSON. Every call has a deadline, so an API server that
 * accepts connections and never answers makes the pass fail (Unreachable) instead of hang.
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease
} from '@kubernetes/client-node'
import { deadline } from './clock.ts'
import { eventRecorder } from './events.ts'
import type { ReducedKubeconfig } from '../workload/kubeconfig.ts'
import type { InfraApi, LeaseApi, ObjectsApi } from '../model/apis.ts'

/** The HTTP status of a client-node error, if it has one. */
export function statusCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'number'
    ? (error as { code: number }).code
    : undefined
}

/** Plain JSON of a client-node object (Dates become RFC 3339 strings). */
export function plain(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value))
}

const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch)

const GROUP = 'cells.kubeswift.io'
const VERSION = 'v1alpha1'

/** The infrastructure cluster through client-node; every call gets `timeoutMs`. */
export function infraApi(kc: KubeConfig, timeoutMs: number): InfraApi {
  const custom = kc.makeApiClient(CustomObjectsApi)
  const core = kc.makeApiClient(CoreV1Api)
  const events = eventRecorder(kc, timeoutMs)
  const withDeadline = <T>(what: string, call: Promise<T>): Promise<T> => deadline(what, call, timeoutMs)
  return {
    async getPool(namespace, name) {
      try {
        return plain(
          await withDeadline(
            `get GPUCellPool ${namespace}/${name}`,
            custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'gpucellpools', name })
          )
        )
      } catch (error) {
        if (statusCode(error) === 404) return undefined
        throw error
      }
    },
    async getSecret(namespace, name) {
      try {
        return plain(await withDeadline(`get Secret ${namespace}/${name}`, core.readNamespacedSecret({ namespace, name })))
      } catch (error) {
        if (statusCode(error) === 404) return undefined
        throw error
      }
    },
    async replaceStatus(namespace, name, resourceVersion, status) {
      const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'CellNodeSet', metadata: { name, namespace, resourceVersion }, status }
      const answer: unknown = await withDeadline(
        `update CellNodeSet ${namespace}/${name} status`,
        custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace, plural: 'cellnodesets', name, body })
      )
      const metadata =
        typeof answer === 'object' && answer !== null ? (answer as { metadata?: { resourceVersion?: unknown } }).metadata : undefined
      return typeof metadata?.resourceVersion === 'string' ? metadata.resourceVersion : undefined
    },
    async setFinalizers(namespace, name, expected, next) {
      const body =
        expected.length === 0
          ? [{ op: 'add', path: '/metadata/finalizers', value: next }]
          : [
              { op: 'test', path: '/metadata/finalizers', value: expected },
              { op: 'replace', path: '/metadata/finalizers', value: next }
            ]
      await withDeadline(
        `patch CellNodeSet ${namespace}/${name} finalizers`,
        custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'cellnodesets', name, body }, jsonPatch)
      )
    },
    async warn(cns, reason, message, now) {
      await events.record({ ...cns, kind: 'CellNodeSet', apiVersion: `${GROUP}/${VERSION}` }, 'Warning', reason, message, now)
    },
    poolEvent: (pool, type, reason, message, now) =>
      events.record({ ...pool, kind: 'GPUCellPool', apiVersion: `${GROUP}/${VERSION}` }, type, reason, message, now),
    recountEvent: (namespace, name, count, now) => events.recount(namespace, name, count, now)
  }
}

/**
 * Any object of the infrastructure cluster through client-node's generic API (the kind's
 * resource found by discovery), for the Machines, KubeSwiftMachines and bootstrap configs of
 * Cluster API cells; every call gets `timeoutMs`.
 */
export function objectsApi(kc: KubeConfig, timeoutMs: number): ObjectsApi {
  const objects = KubernetesObjectApi.makeApiClient(kc)
  const custom = kc.makeApiClient(CustomObjectsApi)
  const pools = infraApi(kc, timeoutMs)
  const withDeadline = <T>(what: string, call: Promise<T>): Promise<T> => deadline(what, call, timeoutMs)
  return {
    getPool: (namespace, name) => pools.getPool(namespace, name),
    async get(apiVersion, kind, namespace, name) {
      try {
        return plain(
          await withDeadline(`get ${kind} ${namespace}/${name}`, objects.read({ apiVersion, kind, metadata: { name, namespace } }))
        )
      } catch (error) {
        if (statusCode(error) === 404) return undefined
        throw error
      }
    },
    async create(object) {
      const metadata = (object.metadata ?? {}) as { name?: string; namespace?: string }
      await withDeadline(
        `create ${String(object.kind)} ${metadata.namespace ?? ''}/${metadata.name ?? ''}`,
        objects.create(object as never)
      )
    },
    async patch(apiVersion, kind, namespace, name, patch) {
      const body = { ...patch, apiVersion, kind, metadata: { ...(patch.metadata ?? {}), name, namespace } }
      await withDeadline(
        `patch ${kind} ${namespace}/${name}`,
        objects.patch(body as never, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch)
      )
    },
    async replaceStatus(namespace, name, resourceVersion, status) {
      const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'CellInfrastructure', metadata: { name, namespace, resourceVersion }, status }
      await withDeadline(
        `update CellInfrastructure ${namespace}/${name} status`,
        custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace, plural: 'cellinfrastructures', name, body })
      )
    }
  }
}

/** The leader Lease in the infrastructure cluster through client-node; every call gets `timeoutMs`. */
export function leaseApi(kc: KubeConfig, lease: { namespace: string; name: string }, timeoutMs: number): LeaseApi {
  const coordination = kc.makeApiClient(CoordinationV1Api)
  const what = `Lease ${lease.namespace}/${lease.name}`
  return {
    async get() {
      try {
        return plain(await deadline(`get ${what}`, coordination.readNamespacedLease(lease), timeoutMs))
      } catch (error) {
        if (statusCode(error) === 404) return undefined
        throw error
      }
    },
    async create(body) {
      await deadline(
        `create ${what}`,
        coordination.createNamespacedLease({ namespace: lease.namespace, body: body as unknown as V1Lease }),
        timeoutMs
      )
    },
    async replace(body) {
      await deadline(`replace ${what}`, coordination.replaceNamespacedLease({ ...lease, body: body as unknown as V1Lease }), timeoutMs)
    }
  }
}

/**
 * One client per workload cluster kubeconfig Secret, rebuilt when the Secret's resourceVersion
 * changes (a rotated credential takes effect at the next pass) and kept otherwise, so that
 * connections are reused across passes. A client replaced, or of a Secret no CellNodeSet names
 * any more, is handed to `dispose` (its connections closed).
 */
export class ClientCache<T> {
  private readonly clients = new Map<string, { resourceVersion: string; client: T }>()

  constructor(
    private readonly build: (config: ReducedKubeconfig) => T,
    private readonly dispose: (client: T) => void = () => {}
  ) {}

  /** The client for `secretKey` at `resourceVersion`, and whether it was built by this call. */
  get(secretKey: string, resourceVersion: string, config: ReducedKubeconfig): { client: T; built: boolean } {
    const cached = this.clients.get(secretKey)
    if (cached !== undefined && cached.resourceVersion === resourceVersion) return { client: cached.client, built: false }
    const client = this.build(config)
    if (cached !== undefined) this.dispose(cached.client)
    this.clients.set(secretKey, { resourceVersion, client })
    return { client, built: true }
  }

  /** Keeps the clients of `secretKeys` only. */
  retain(secretKeys: ReadonlySet<string>): void {
    for (const [key, cached] of this.clients) {
      if (secretKeys.has(key)) continue
      this.clients.delete(key)
      this.dispose(cached.client)
    }
  }

  /** The Secrets that have a client. */
  get size(): number {
    return this.clients.size
  }
}
