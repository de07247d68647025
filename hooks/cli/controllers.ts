/**
 * The parents `gpuhooks render` knows, one row per controller: how Metacontroller calls its hooks
 * (composite or decorator), the child types its manifest in `metacontroller/` declares, and the
 * pure functions. Adding a controller is adding its row.
 */
import type { TSchema } from '@sinclair/typebox'
import { typeKey } from '../metacontroller/observed.ts'
import type { CustomizeResponse } from '../metacontroller/schemas.ts'
import { InstanceCustomizeRequestSchema, customize as instanceCustomize } from '../instance/customize.ts'
import { InstanceSyncRequestSchema, POD_KEY, SERVICE_KEY } from '../instance/request.ts'
import { sync as instanceSync } from '../instance/sync.ts'
import { finalize as instanceFinalize } from '../instance/finalize.ts'
import { IsolationCustomizeRequestSchema, customize as isolationCustomize } from '../isolation/customize.ts'
import { IsolationSyncRequestSchema, NETWORK_POLICY_TYPE_KEY, sync as isolationSync } from '../isolation/sync.ts'
import { CELL_NODE_SET_TYPE_KEY } from '../api/cellnodeset.ts'
import { SECRET_TYPE_KEY, SEED_PROFILE_TYPE_KEY, SWIFT_GUEST_TYPE_KEY } from '../api/gpucellpool.ts'
import { CellPoolCustomizeRequestSchema, customize as cellPoolCustomize } from '../cellpool/customize.ts'
import { CellPoolSyncRequestSchema } from '../cellpool/request.ts'
import { sync as cellPoolSync } from '../cellpool/sync.ts'
import { finalize as cellPoolFinalize } from '../cellpool/finalize.ts'

/** One controller as the render CLI drives it. */
export interface RenderController {
  /** The parent's apiVersion and kind. */
  apiVersion: string
  kind: string
  /** Metacontroller's controller name (metacontroller/*.yaml). */
  name: string
  /** Composite: request `{parent, children}`; decorator: `{object, attachments}`. */
  shape: 'composite' | 'decorator'
  /** The child (attachment) type keys the controller declares. */
  childTypes: readonly string[]
  customizeSchema: TSchema
  customize: (request: never) => CustomizeResponse
  syncSchema: TSchema
  sync: (request: never, now: Date) => unknown
  /** The finalize hook, where the controller has one. */
  finalize?: (request: never, now: Date) => unknown
}

/** Every parent the CLI renders, in the order the usage text names them. */
export const RENDER_CONTROLLERS: readonly RenderController[] = [
  {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    name: 'gpuhooks-instance',
    shape: 'composite',
    childTypes: [POD_KEY, SERVICE_KEY],
    customizeSchema: InstanceCustomizeRequestSchema,
    customize: instanceCustomize,
    syncSchema: InstanceSyncRequestSchema,
    sync: instanceSync,
    finalize: instanceFinalize
  },
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    name: 'gpuhooks-instance-isolation',
    shape: 'decorator',
    childTypes: [NETWORK_POLICY_TYPE_KEY],
    customizeSchema: IsolationCustomizeRequestSchema,
    customize: isolationCustomize,
    syncSchema: IsolationSyncRequestSchema,
    sync: (request: never) => isolationSync(request)
  },
  {
    apiVersion: 'cells.kubeswift.io/v1alpha1',
    kind: 'GPUCellPool',
    name: 'gpuhooks-cellpool',
    shape: 'composite',
    // metacontroller/cellpool.yaml's childResources; the join Secret is its related object (v1 Secret).
    childTypes: [SECRET_TYPE_KEY, SEED_PROFILE_TYPE_KEY, SWIFT_GUEST_TYPE_KEY, CELL_NODE_SET_TYPE_KEY],
    customizeSchema: CellPoolCustomizeRequestSchema,
    customize: cellPoolCustomize,
    syncSchema: CellPoolSyncRequestSchema,
    sync: cellPoolSync,
    finalize: cellPoolFinalize
  }
]

/**
 * Kinds a related rule may name, by their resource (plural) name: the customize answers name
 * resources, the request keys name kinds.
 */
export const RELATED_KINDS: ReadonlyMap<string, { apiVersion: string; kind: string }> = new Map(
  [
    ['v1', 'Namespace'],
    ['v1', 'Secret'],
    ['v1', 'Service'],
    ['v1', 'Pod'],
    ['v1', 'Node'],
    ['v1', 'ConfigMap'],
    ['node.k8s.io/v1', 'RuntimeClass'],
    ['gpustack.ai/v1alpha1', 'Setting'],
    ['worker.gpustack.ai/v1alpha1', 'Instance'],
    ['worker.gpustack.ai/v1alpha1', 'InstanceType'],
    ['cells.kubeswift.io/v1alpha1', 'GPUCellPool'],
    ['cells.kubeswift.io/v1alpha1', 'CellNodeSet']
  ].map(([apiVersion, kind]) => [
    `${apiVersion as string} ${plural(kind as string)}`,
    { apiVersion: apiVersion as string, kind: kind as string }
  ])
)

/** The resource name of a kind, as Kubernetes forms it for these kinds. */
export function plural(kind: string): string {
  const lower = kind.toLowerCase()
  if (lower.endsWith('s')) return `${lower}es`
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`
  return `${lower}s`
}

/** The type key of a related rule, when its kind is known. */
export function ruleTypeKey(apiVersion: string, resource: string): string | undefined {
  const found = RELATED_KINDS.get(`${apiVersion} ${resource}`)
  return found === undefined ? undefined : typeKey(found.apiVersion, found.kind)
}
