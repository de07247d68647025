/**
 * Customize hook of the Instance controller: the related objects its sync reads (docs/instance.md,
 * "customize").
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, so it
 * depends on the parent's name, namespace and spec only. Every namespaced rule names its namespace
 * (docs/metacontroller.md rule 6: under v2 a `names` rule without one matches in every namespace);
 * cluster-scoped objects are related by name alone.
 *
 * Choice where the spec is silent: a spec without a usable `type` string relates no InstanceType
 * (an empty `names` list is not a rule worth sending); sync then reports the spec error.
 */
import type { Static } from '@sinclair/typebox'
import { WORKER_API_VERSION } from '../api/instance.ts'
import { ACCESS_ADDRESS_SETTING, SETTING_API_VERSION, SSH_SERVER_IMAGE_SETTING } from '../api/setting.ts'
import { isRecord } from '../k8s/objects.ts'
import { customizeRequestSchema, type CustomizeResponse, type RelatedResourceRule } from '../metacontroller/schemas.ts'
import { InstanceParentSchema } from './request.ts'

/** Customize request of the Instance controller. */
export const InstanceCustomizeRequestSchema = customizeRequestSchema(InstanceParentSchema)
export type InstanceCustomizeRequest = Static<typeof InstanceCustomizeRequestSchema>

/**
 * Relates the InstanceType named by `spec.type`, the Settings `instance-ssh-server-image` and
 * `instance-access-address` (status.connect's address), the
 * Instance's Namespace (its Pod Security labels), the Service named after the Instance (to see a
 * name taken by someone else), the RuntimeClasses, with SSH the key Secret, and with a persistent
 * workspace the StorageClasses.
 */
export function customize(request: InstanceCustomizeRequest): CustomizeResponse {
  const { name, namespace } = request.parent.metadata
  const spec = request.parent.spec
  const rules: RelatedResourceRule[] = []
  if (typeof spec.type === 'string' && spec.type !== '') {
    rules.push({ apiVersion: WORKER_API_VERSION, resource: 'instancetypes', names: [spec.type] })
  }
  rules.push(
    { apiVersion: SETTING_API_VERSION, resource: 'settings', names: [SSH_SERVER_IMAGE_SETTING, ACCESS_ADDRESS_SETTING] },
    { apiVersion: 'v1', resource: 'namespaces', names: [namespace] },
    { apiVersion: 'v1', resource: 'services', namespace, names: [name] },
    // Every RuntimeClass: the InstanceType names one, but customize sees only the Instance. A
    // missing one would make the API server refuse the Pod on every sync with no word in status.
    { apiVersion: 'node.k8s.io/v1', resource: 'runtimeclasses' }
  )
  // A persistent workspace: every StorageClass (the claim may take the default one), for the
  // binding mode and volume expansion status.workspace and a grown size depend on.
  if (isRecord(spec.workspace) && spec.workspace.persistent !== undefined) {
    rules.push({ apiVersion: 'storage.k8s.io/v1', resource: 'storageclasses' })
  }
  const key = spec.sshPublicKey
  if (isRecord(key) && typeof key.name === 'string' && key.name !== '') {
    rules.push({ apiVersion: 'v1', resource: 'secrets', namespace, names: [key.name] })
  }
  return { relatedResources: rules }
}
