/**
 * Set-up shared by the tests that send the Instance sync hook a request with observed children
 * (the sync, hostile-input and HTTP fuzz tests): the Pod the hook itself builds for a spec, to
 * stand as the observed Pod, and the related objects an Instance with an SSH key reads.
 */
import { DEFAULT_SSH_SERVER_IMAGE } from '../../hooks/api/setting.ts'
import type { InstanceSpec } from '../../hooks/api/instance.ts'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'
import { buildPod } from '../../hooks/instance/pod.ts'
import { withDefaults } from '../../hooks/instance/validate.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { NAME, NS, TYPE, instanceType, keySecret, namespaceObject } from '../unit/fixtures/instance.ts'

/** The spec of the fixtures' default InstanceType (`instanceType()`). */
export const TYPE_SPEC = { families: ['Whole', 'Shared'] }

/**
 * The Pod the hook builds for `spec` at `generation` (1 by default) from the InstanceType `type`
 * (the default one unless given). An Instance with an SSH key gets the sidecar image `sshImage`,
 * or the published default.
 */
export function builtPod(
  spec: Record<string, unknown>,
  options: { generation?: number; type?: Record<string, unknown>; sshImage?: string } = {}
): KubeObject {
  const resolved = withDefaults(spec as unknown as InstanceSpec)
  return buildPod({
    name: NAME,
    namespace: NS,
    generation: options.generation ?? 1,
    spec: resolved,
    typeName: TYPE,
    type: (options.type ?? TYPE_SPEC) as InstanceTypeSpec,
    sshImage: resolved.sshPublicKey !== undefined ? (options.sshImage ?? DEFAULT_SSH_SERVER_IMAGE) : undefined
  })
}

/** The Namespace labels under which Pod Security admits the SSH sidecar whatever the cluster default. */
export const PRIVILEGED = { 'pod-security.kubernetes.io/enforce': 'privileged' }

/**
 * What an Instance with `sshPublicKey: { name: 'keys' }` relates: the default InstanceType, its
 * Namespace (with `namespaceLabels`), the key Secret (`key`, or one with a valid key), then `extra`.
 */
export function sshRelated(
  options: { namespaceLabels?: Record<string, string>; key?: KubeObject; extra?: readonly KubeObject[] } = {}
): KubeObject[] {
  return [instanceType(), namespaceObject(options.namespaceLabels), options.key ?? keySecret('keys'), ...(options.extra ?? [])]
}
