/**
 * An in-memory API server behind the cluster driver's REST interface (`KubeApi`), for unit tests
 * that run the Metacontroller stand-in (tests/cluster/support/driver.ts) without a cluster: the
 * defaulting fixture (server-defaults.ts) on create and update, finalizers honoured on delete, and
 * CRD status pruned to `keepStatus` fields when given (to show a schema that drops fields).
 */
import { isObject, type JsonObject } from './merge.ts'
import { FakeServer, ServerError } from './fake-server.ts'
import { defaultOnCreate, defaultOnUpdate } from './server-defaults.ts'
import {
  KubeError,
  type DeleteOptions,
  type KubeApi,
  type KubeResponse,
  type ResourceInfo,
  type ResourceRef
} from '../cluster/support/kube.ts'

/** The resources the fake serves, as discovery describes them. */
export const RESOURCES: ResourceInfo[] = [
  { apiVersion: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, subresources: ['status'] },
  { apiVersion: 'v1', resource: 'services', kind: 'Service', namespaced: true, subresources: ['status'] },
  { apiVersion: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, subresources: ['status'] },
  { apiVersion: 'v1', resource: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', namespaced: true, subresources: ['status'] },
  { apiVersion: 'storage.k8s.io/v1', resource: 'storageclasses', kind: 'StorageClass', namespaced: false, subresources: [] },
  { apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true, subresources: [] },
  {
    apiVersion: 'resource.k8s.io/v1',
    resource: 'resourceclaimtemplates',
    kind: 'ResourceClaimTemplate',
    namespaced: true,
    subresources: []
  },
  { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', kind: 'Instance', namespaced: true, subresources: ['status'] },
  {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    resource: 'instanceactivities',
    kind: 'InstanceActivity',
    namespaced: true,
    subresources: ['status']
  },
  { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', kind: 'Setting', namespaced: false, subresources: [] }
]
/** The API server of one test: pass it to the driver, read and write it as a client would. */
export class FakeKube implements KubeApi {
  readonly server = new FakeServer()
  readonly store = new Map<string, JsonObject>()
  keepStatus: string[] | undefined
  private key = (r: ResourceRef, name = r.name): string => `${r.apiVersion}|${r.resource}|${r.namespace ?? ''}|${name ?? ''}`
  private fail(status: number, reason: string, message: string): never {
    throw new KubeError(status, reason, message, 'FAKE', '', null)
  }
  private found(ref: ResourceRef): JsonObject {
    return this.store.get(this.key(ref)) ?? this.fail(404, 'NotFound', `${ref.resource} "${ref.name ?? ''}" not found`)
  }
  private wrap<T>(fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      if (err instanceof ServerError) this.fail(err.reason === 'Conflict' ? 409 : 422, err.reason, err.message)
      throw err
    }
  }
  private put(ref: ResourceRef, obj: JsonObject): KubeResponse {
    const m = obj.metadata as JsonObject
    if (typeof m.deletionTimestamp === 'string' && (!Array.isArray(m.finalizers) || m.finalizers.length === 0))
      this.store.delete(this.key(ref))
    else this.store.set(this.key(ref), obj)
    return { status: 200, body: structuredClone(obj) }
  }
  async get(ref: ResourceRef): Promise<KubeResponse> {
    return { status: 200, body: structuredClone(this.found(ref)) }
  }
  async list(ref: ResourceRef): Promise<KubeResponse<JsonObject[]>> {
    const prefix = `${ref.apiVersion}|${ref.resource}|`
    const items = [...this.store].filter(
      ([k]) => k.startsWith(prefix) && (ref.namespace === undefined || k.startsWith(`${prefix}${ref.namespace}|`))
    )
    return { status: 200, body: items.map(([, o]) => structuredClone(o)) }
  }
  async create(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    const name = String((body.metadata as JsonObject).name)
    if (this.store.has(this.key(ref, name))) this.fail(409, 'AlreadyExists', `${ref.resource} "${name}" already exists`)
    return this.put(
      { ...ref, name },
      this.wrap(() => defaultOnCreate(body, this.server))
    )
  }
  async update(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    return this.put(
      ref,
      this.wrap(() => defaultOnUpdate(this.found(ref), body, this.server))
    )
  }
  async updateStatus(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    const old = this.found(ref)
    const status = isObject(body.status) ? { ...body.status } : {}
    if (this.keepStatus !== undefined) for (const k of Object.keys(status)) if (!this.keepStatus.includes(k)) delete status[k]
    const next: JsonObject = { ...structuredClone(old), status }
    if (JSON.stringify(next) !== JSON.stringify(old)) (next.metadata as JsonObject).resourceVersion = this.server.resourceVersion()
    return this.put(ref, next)
  }
  async delete(ref: ResourceRef, options: DeleteOptions = {}): Promise<KubeResponse> {
    const old = this.found(ref)
    const m = old.metadata as JsonObject
    if (options.preconditions?.uid !== undefined && options.preconditions.uid !== m.uid)
      this.fail(409, 'Conflict', 'uid precondition failed')
    return this.put(ref, { ...old, metadata: { ...m, deletionTimestamp: m.deletionTimestamp ?? this.server.now } })
  }
  async patch(): Promise<KubeResponse> {
    throw new Error('not used')
  }
  async resourceInfo(apiVersion: string, resourceOrKind: string): Promise<ResourceInfo> {
    const info = RESOURCES.find((r) => r.apiVersion === apiVersion && (r.resource === resourceOrKind || r.kind === resourceOrKind))
    return info ?? this.fail(404, 'NotFound', `no ${resourceOrKind} in ${apiVersion}`)
  }
}
