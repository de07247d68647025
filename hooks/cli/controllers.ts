/**
 * The parents `gpuhooks render` knows, one row per controller: how Metacontroller calls its hooks
 * (composite or decorator), the rule of what it may answer (its child types as its manifest in
 * `metacontroller/` declares them, and their names), and the pure functions. Adding a controller
 * is adding its row.
 */
import type { TSchema } from '@sinclair/typebox'
import { typeKey } from '../metacontroller/observed.ts'
import type { CustomizeResponse } from '../metacontroller/schemas.ts'
import { declaredTypeKeys, type ChildRule } from '../metacontroller/answer-guard.ts'
import { INSTANCE_CHILD_RULE } from '../instance/answer-rule.ts'
import { ISOLATION_ATTACHMENT_RULE } from '../isolation/answer-rule.ts'
import { CELL_POOL_CHILD_RULE } from '../cellpool/request/answer-rule.ts'
import { InstanceCustomizeRequestSchema, customize as instanceCustomize } from '../instance/customize.ts'
import { InstanceSyncRequestSchema } from '../instance/request.ts'
import { sync as instanceSync } from '../instance/sync.ts'
import { finalize as instanceFinalize } from '../instance/finalize.ts'
import { IsolationCustomizeRequestSchema, customize as isolationCustomize } from '../isolation/customize.ts'
import { IsolationSyncRequestSchema, sync as isolationSync } from '../isolation/sync.ts'
import { sync as cellPoolSync, customize as cellPoolCustomize, finalize as cellPoolFinalize } from '../cellpool/hooks.ts'
import { CellPoolCustomizeRequestSchema, CellPoolSyncRequestSchema } from '../cellpool/model/request.ts'

/** One controller as the render CLI drives it. */
export interface RenderController {
  /** The parent's apiVersion and kind. */
  apiVersion: string
  kind: string
  /** Metacontroller's controller name (metacontroller/*.yaml). */
  name: string
  /** Composite: request `{parent, children}`; decorator: `{object, attachments}`. */
  shape: 'composite' | 'decorator'
  /** The child (attachment) type keys the controller declares: those of `rule`. */
  childTypes: readonly string[]
  /** What its answers may hold (answer-guard.ts); `gpuhooks render` checks them as the service does. */
  rule: ChildRule
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
    childTypes: declaredTypeKeys(INSTANCE_CHILD_RULE),
    rule: INSTANCE_CHILD_RULE,
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
    childTypes: declaredTypeKeys(ISOLATION_ATTACHMENT_RULE),
    rule: ISOLATION_ATTACHMENT_RULE,
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
    childTypes: declaredTypeKeys(CELL_POOL_CHILD_RULE),
    rule: CELL_POOL_CHILD_RULE,
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
    ['resource.k8s.io/v1', 'ResourceSlice'],
    ['resource.k8s.io/v1', 'ResourceClaim'],
    ['resource.k8s.io/v1', 'ResourceClaimTemplate'],
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
