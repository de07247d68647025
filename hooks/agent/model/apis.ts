/**
 * The agent's view of its clusters as small interfaces (the infrastructure cluster, a workload
 * cluster, the leader Lease, an informer's cache), so that the pass layers can be tested against
 * fakes and the process wires in the real clients (runtime/clients.ts, workload/client.ts).
 * Types only.
 */
import type { CellInfrastructureStatus } from '../../api/cellinfrastructure.ts'

/**
 * What the agent does in a workload cluster: read Nodes, Leases, Pods and, for a pool in HAMi's
 * DRA mode, ResourceSlices, ResourceClaims and DeviceClasses; patch and delete Nodes.
 */
export interface WorkloadApi {
  /** Nodes matching a label selector. */
  listNodes(labelSelector: string): Promise<unknown[]>
  /** One Node, or undefined when there is none. */
  getNode(name: string): Promise<unknown>
  /** The Lease `kube-node-lease/<node>`, or undefined when there is none. */
  getNodeLease(node: string): Promise<unknown>
  /** Pods of every namespace matching a field selector, in one answer. */
  listPods(fieldSelector: string): Promise<unknown[]>
  /** One page of them: at most `limit` Pods, after `continueToken`, and the token of the next page if there is one. */
  listPodPage(fieldSelector: string, limit: number, continueToken?: string): Promise<{ items: unknown[]; continue?: string }>
  /** ResourceSlices (resource.k8s.io/v1) matching a field selector (`spec.nodeName`, `spec.driver`), in one answer. */
  listResourceSlices(fieldSelector: string): Promise<unknown[]>
  /** One page of the ResourceClaims of every namespace, as {@link listPodPage}. */
  listResourceClaimPage(limit: number, continueToken?: string): Promise<{ items: unknown[]; continue?: string }>
  /** One DeviceClass, or undefined when there is none. */
  getDeviceClass(name: string): Promise<unknown>
  /** A JSON merge patch of a Node. */
  patchNode(name: string, patch: unknown): Promise<void>
  /** Deletes a Node only if it is still the one seen (uid and resourceVersion preconditions). */
  deleteNode(name: string, preconditions: { uid: string; resourceVersion: string }): Promise<void>
}

/** What the agent does in the infrastructure cluster for one CellNodeSet. */
export interface InfraApi {
  getPool(namespace: string, name: string): Promise<unknown>
  /**
   * One Secret read by name, or undefined when there is none: the kubeconfig Secret a CellNodeSet
   * names. Read at each pass and never cached whole (docs/workload.md, step 0).
   */
  getSecret(namespace: string, name: string): Promise<unknown>
  /** Replaces the status (PUT on the status subresource, guarded by resourceVersion); returns the new resourceVersion. */
  replaceStatus(namespace: string, name: string, resourceVersion: string, status: unknown): Promise<string | undefined>
  /** Sets the finalizer list if it is still `expected` (JSON patch test + replace). */
  setFinalizers(namespace: string, name: string, expected: string[], next: string[]): Promise<void>
  /** A Warning Event on the CellNodeSet. */
  warn(cns: { namespace: string; name: string; uid: string }, reason: string, message: string, now: Date): Promise<void>
  /** An Event about a GPUCellPool (pool-events.ts); resolves with its name. */
  poolEvent(
    pool: { namespace: string; name: string; uid: string },
    type: EventType,
    reason: string,
    message: string,
    now: Date
  ): Promise<string | undefined>
  /** Counts one more occurrence on an Event already written. */
  recountEvent(namespace: string, name: string, count: number, now: Date): Promise<void>
}

/** What a CellInfrastructure pass does in the infrastructure cluster. */
export interface ObjectsApi {
  getPool(namespace: string, name: string): Promise<unknown>
  /** An object by apiVersion and kind, or undefined when there is none. */
  get(apiVersion: string, kind: string, namespace: string, name: string): Promise<unknown>
  create(object: Record<string, unknown>): Promise<void>
  /** A JSON merge patch. */
  patch(apiVersion: string, kind: string, namespace: string, name: string, patch: Record<string, unknown>): Promise<void>
  /** Replaces the CellInfrastructure's status (guarded by resourceVersion). */
  replaceStatus(namespace: string, name: string, resourceVersion: string, status: CellInfrastructureStatus): Promise<void>
}

/** The Lease operations the elector needs. */
export interface LeaseApi {
  /** The Lease, or undefined when it does not exist. */
  get(): Promise<unknown>
  create(lease: LeaseBody): Promise<void>
  /** Replaces the Lease; must fail (409) when `lease.metadata.resourceVersion` is not current. */
  replace(lease: LeaseBody): Promise<void>
}

/** The Lease as written. */
export interface LeaseBody {
  metadata: { name: string; namespace: string; resourceVersion?: string }
  spec: { holderIdentity: string; leaseDurationSeconds: number; acquireTime?: string; renewTime: string; leaseTransitions: number }
}

/** An informer's cache as the controller reads it. */
export interface ObjectCache {
  get(name: string, namespace?: string): unknown
  list(): ReadonlyArray<unknown>
}

/** `Normal` for what went as expected, `Warning` for what a person should look at. */
export type EventType = 'Normal' | 'Warning'
