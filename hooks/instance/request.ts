/**
 * The Instance controller's request: its schema, and what the hooks read out of it.
 *
 * Customize, sync and finalize all read the same parent; sync and finalize the same children and
 * related objects. Reading them happens here, once, and defensively: names in the request are
 * chosen by users (a tenant may name an InstanceType `constructor`), and related objects may have
 * been stored before a schema or rule existed, so every lookup is by own property and every object
 * is checked before use. A related object of the wrong shape becomes a problem naming the object
 * and the field, which sync reports in status; nothing here throws.
 */
import type { Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { INSTANCE_ACTIVITY_KEY } from '../api/instanceactivity.ts'
import { INSTANCE_TYPE_TYPE_KEY, InstanceTypeSpecSchema, type InstanceTypeSpec } from '../api/instancetype.ts'
import {
  ACCESS_ADDRESS_SETTING,
  DEFAULT_SSH_SERVER_IMAGE,
  SETTING_TYPE_KEY,
  SSH_SERVER_IMAGE_SETTING,
  readAccessAddress,
  settingValue,
  type AccessAddress
} from '../api/setting.ts'
import { isRecord, type KubeObject } from '../k8s/objects.ts'
import { objectKey, observedObject, observedOfType } from '../metacontroller/observed.ts'
import { OpenSpecParentSchema, compositeRequestSchema } from '../metacontroller/schemas.ts'
import { describe } from '../k8s/schema-messages.ts'
import { schemaMessages } from './validate.ts'
import { claimTemplateName, workspaceClaimName } from './labels.ts'
import { lifecycleProblems } from './lifecycle-policy.ts'

/** Type keys of the children (metacontroller/instance.yaml). */
export const POD_KEY = 'Pod.v1'
export const SERVICE_KEY = 'Service.v1'
export const CLAIM_TEMPLATE_KEY = 'ResourceClaimTemplate.resource.k8s.io/v1'
export const WORKSPACE_CLAIM_KEY = 'PersistentVolumeClaim.v1'
export const ACTIVITY_KEY = INSTANCE_ACTIVITY_KEY
/** Type keys of the related objects the customize hook asks for. */
export const NAMESPACE_KEY = 'Namespace.v1'
export const SECRET_KEY = 'Secret.v1'
export const RUNTIME_CLASS_KEY = 'RuntimeClass.node.k8s.io/v1'
export const STORAGE_CLASS_KEY = 'StorageClass.storage.k8s.io/v1'

/**
 * An Instance as a hook reads it. The spec stays open: a wrong spec is reported in status, not
 * refused with a 400 (docs/README.md, "Hook endpoints").
 */
export const InstanceParentSchema = OpenSpecParentSchema

/** Sync and finalize request of the Instance controller. */
export const InstanceSyncRequestSchema = compositeRequestSchema(InstanceParentSchema)
export type InstanceSyncRequest = Static<typeof InstanceSyncRequestSchema>

/** The InstanceType `spec.type` names, as read from the related objects. */
export type RelatedInstanceType =
  /** No InstanceType of that name was observed (or `spec.type` is not a usable string). */
  | { state: 'missing' }
  /** Observed, and its spec fits the InstanceType schema. */
  | { state: 'valid'; spec: InstanceTypeSpec }
  /** Observed, but stored in a shape the hooks cannot use: one message per bad field. */
  | { state: 'invalid'; errors: string[] }

/** What the hooks read out of one request. */
export interface InstanceView {
  name: string
  namespace: string
  /** `metadata.uid`, when it is a string. */
  uid: string | undefined
  /** `metadata.annotations` as sent (read by own property only). */
  annotations: unknown
  /** `metadata.generation`, 0 when absent: what the Pod records and is compared with. */
  generation: number
  /** `metadata.generation` as sent, for `status.observedGeneration` (omitted when absent). */
  observedGeneration: number | undefined
  spec: Record<string, unknown>
  previousConditions: unknown
  /** The observed Pod and Service named after the Instance (children). */
  pod: KubeObject | undefined
  service: KubeObject | undefined
  /** The observed ResourceClaimTemplate `<instance>-accelerator` (a child, DRA types only). */
  claimTemplate: KubeObject | undefined
  /** The observed PersistentVolumeClaim `<instance>-workspace` (a child, persistent workspaces only). */
  workspaceClaim: KubeObject | undefined
  /** The StorageClasses observed (related, persistent workspaces only). */
  storageClasses: KubeObject[]
  /** The observed InstanceActivity named after the Instance (a child, types with a lifecycle only). */
  activity: KubeObject | undefined
  /** A Service named after the Instance exists but is not its child. */
  serviceTaken: boolean
  /** The valid InstanceType's spec; undefined when it is missing or invalid (see `instanceType`). */
  type: InstanceTypeSpec | undefined
  instanceType: RelatedInstanceType
  namespaceObject: KubeObject | undefined
  secret: KubeObject | undefined
  /** The SSH sidecar image: the Setting's value, else the published default. */
  sshImage: string
  /** Why the SSH image Setting cannot be used (its value is not a string), when it cannot. */
  sshImageProblem: string | undefined
  /** Names of the RuntimeClasses that exist. */
  runtimeClasses: ReadonlySet<string>
  /** The Setting `instance-access-address`: its address, or why it cannot be used; empty when unset. */
  accessAddress: AccessAddress
}

/** The InstanceType schema compiled once. */
const TYPE_SPEC_CHECK = TypeCompiler.Compile(InstanceTypeSpecSchema)

/** At most this many bad fields of a related object are spelled out in status. */
const MAX_OBJECT_ERRORS = 5

/**
 * The InstanceType object checked against its schema. A spec that is absent reads as empty (every
 * field has a default); one that is not an object, or any field of the wrong type or range, makes
 * it invalid with messages naming `InstanceType <name> spec.<field>`.
 */
export function readInstanceType(name: string, object: KubeObject | undefined): RelatedInstanceType {
  if (object === undefined) return { state: 'missing' }
  const spec: unknown = object.spec ?? {}
  const where = `InstanceType ${name}`
  if (!isRecord(spec)) return { state: 'invalid', errors: [`${where} spec must be an object, not ${describe(spec)}`] }
  // Every sync reads the InstanceType: a well-formed one costs the compiled check alone.
  const lifecycle = lifecycleProblems(spec.lifecycle).map((m) => `${where} ${m}`)
  if (TYPE_SPEC_CHECK.Check(spec) && lifecycle.length === 0) return { state: 'valid', spec }
  const errors = [...schemaMessages(InstanceTypeSpecSchema, spec, 'spec').map((m) => `${where} ${m.message}`), ...lifecycle]
  const shown = errors.slice(0, MAX_OBJECT_ERRORS)
  if (errors.length > shown.length) shown.push(`and ${errors.length - shown.length} more`)
  return { state: 'invalid', errors: shown.length > 0 ? shown : [`${where} spec does not fit the InstanceType schema`] }
}

/** Reads the request. */
export function readView(request: InstanceSyncRequest): InstanceView {
  const { name, namespace, generation } = request.parent.metadata
  const spec = isRecord(request.parent.spec) ? request.parent.spec : {}
  const key = objectKey(name, namespace)
  const related = request.related
  const typeName = typeof spec.type === 'string' ? spec.type : ''
  const instanceType =
    typeName === '' ? { state: 'missing' as const } : readInstanceType(typeName, observedObject(related, INSTANCE_TYPE_TYPE_KEY, typeName))
  const secretName = isRecord(spec.sshPublicKey) ? spec.sshPublicKey.name : undefined
  const service = observedObject(request.children, SERVICE_KEY, key)
  const setting = observedObject(related, SETTING_TYPE_KEY, SSH_SERVER_IMAGE_SETTING)
  const settingRaw = setting?.value
  const sshImageProblem =
    settingRaw === undefined || typeof settingRaw === 'string'
      ? undefined
      : `Setting ${SSH_SERVER_IMAGE_SETTING} value must be a string (an image reference), not ${describe(settingRaw)}`
  return {
    name,
    namespace,
    uid: typeof request.parent.metadata.uid === 'string' ? request.parent.metadata.uid : undefined,
    annotations: request.parent.metadata.annotations,
    generation: typeof generation === 'number' ? generation : 0,
    observedGeneration: typeof generation === 'number' ? generation : undefined,
    spec,
    previousConditions: isRecord(request.parent.status) ? request.parent.status.conditions : undefined,
    pod: observedObject(request.children, POD_KEY, key),
    service,
    claimTemplate: observedObject(request.children, CLAIM_TEMPLATE_KEY, objectKey(claimTemplateName(name), namespace)),
    workspaceClaim: observedObject(request.children, WORKSPACE_CLAIM_KEY, objectKey(workspaceClaimName(name), namespace)),
    storageClasses: observedOfType(related, STORAGE_CLASS_KEY),
    activity: observedObject(request.children, ACTIVITY_KEY, key),
    serviceTaken: service === undefined && observedObject(related, SERVICE_KEY, key) !== undefined,
    type: instanceType.state === 'valid' ? instanceType.spec : undefined,
    instanceType,
    namespaceObject: observedObject(related, NAMESPACE_KEY, namespace),
    secret: typeof secretName === 'string' ? observedObject(related, SECRET_KEY, objectKey(secretName, namespace)) : undefined,
    runtimeClasses: new Set(
      observedOfType(related, RUNTIME_CLASS_KEY).flatMap((o) => (typeof o.metadata.name === 'string' ? [o.metadata.name] : []))
    ),
    sshImage: settingValue(setting === undefined ? undefined : { value: settingRaw }) ?? DEFAULT_SSH_SERVER_IMAGE,
    sshImageProblem,
    accessAddress: readAccessAddress(observedObject(related, SETTING_TYPE_KEY, ACCESS_ADDRESS_SETTING)?.value)
  }
}
