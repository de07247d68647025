/**
 * The Instance's Pod (docs/instance.md, "The Pod").
 *
 * The Pod is never updated in place (Metacontroller update method OnDelete): it is rendered once,
 * and replaced by leaving it out of an answer. So it does not need to carry the fields the API
 * server defaults inside atomic lists; it needs to be what the API server accepts, and to be the
 * same bytes for the same input, because its hash (`worker.gpustack.ai/pod-hash`, over the Pod
 * without that annotation) is how the sync hook tells an admin's change of the InstanceType or
 * the SSH image Setting from no change at all.
 *
 * Choices where the spec is silent:
 * - With SSH on, a `spec.ports` entry 22/TCP is served by sshd: it is declared on `sshd` only (a
 *   port declared on two containers of one Pod would be ambiguous to readers and to tools).
 * - An empty `command` or `args` list is written as absent (the image's default), as the API
 *   server treats it.
 * - cpu and memory: requests = limits, each from the Instance or else the InstanceType default;
 *   a resource neither sets is left out (the namespace's LimitRange, if any, decides).
 * - Quantities are written as strings, so an integer `cpu: 2` and `"2"` render the same Pod.
 * - A DRA accelerator is the Pod's claim `accelerator` from the Instance's ResourceClaimTemplate,
 *   listed in `main`'s `resources.claims` only: sshd enters `main`'s namespaces and sees its
 *   devices, and a second container naming the claim would share them, never get more.
 */
import type { Container, PodSpec, Volume } from 'kubernetes-types/core/v1.d.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { DEFAULT_SSH_SERVER_IMAGE } from '../api/setting.ts'
import { cloneJson, recordOf, sortedRecord, type KubeObject } from '../k8s/objects.ts'
import { contentHash, sortKeysDeep } from '../k8s/hash.ts'
import { acceleratorRequests } from './accelerator.ts'
import { usesDra } from './claim.ts'
import {
  ACCELERATOR_CLAIM,
  GENERATION_ANNOTATION,
  MAIN_CONTAINER,
  POD_HASH_ANNOTATION,
  WORKSPACE_VOLUME,
  claimTemplateName,
  podLabels,
  workspaceClaimName
} from './labels.ts'
import { sshSidecar } from './ssh.ts'
import { isSshPort } from './ports.ts'
import type { ResolvedSpec, ResolvedWorkspace } from './validate.ts'

/** What a Pod is built from. */
export interface PodInput {
  /** The Instance's name: also the Pod's. */
  name: string
  namespace: string
  /** The Instance's `metadata.generation`, recorded on the Pod. */
  generation: number
  spec: ResolvedSpec
  /** `spec.type`, the InstanceType's name. */
  typeName: string
  type: InstanceTypeSpec
  /**
   * The SSH sidecar image, from the Setting; set iff SSH is on. SSH is on when
   * `spec.sshPublicKey` is set; without an image the published default is used.
   */
  sshImage: string | undefined
}

/**
 * The Pod of an Instance: name, namespace, the four labels, the generation and pod-hash
 * annotations; container `main` (and `sshd` with SSH); placement from the InstanceType and
 * `spec.nodeName`; no service-account token, no service links, restartPolicy Always.
 */
export function buildPod(input: PodInput): KubeObject {
  const { spec, type } = input
  const accelerator = acceleratorRequests(spec.resources.accelerator, type)
  const claim = spec.resources.accelerator !== undefined && usesDra(type)
  const ssh = spec.sshPublicKey !== undefined
  const containers: Container[] = [mainContainer(spec, type, accelerator.main, ssh, claim)]
  const volumes: Volume[] = [workspaceVolume(spec.workspace, input.name)]
  if (spec.sshPublicKey !== undefined) {
    const sidecar = sshSidecar({
      image: input.sshImage ?? DEFAULT_SSH_SERVER_IMAGE,
      secretName: spec.sshPublicKey.name,
      visibility: accelerator.sidecar
    })
    containers.push(sidecar.container)
    volumes.push(...sidecar.volumes)
  }

  const pullSecrets = (spec.imagePullSecrets ?? []).map((s) => ({ name: s.name }))
  const nodeSelector = type.nodeSelector ?? {}
  const tolerations = type.tolerations ?? []
  // Keys in alphabetical order, optional ones only when set.
  const podSpec: PodSpec = {
    ...(spec.nodeName !== undefined ? { affinity: nodeAffinity(spec.nodeName) } : {}),
    automountServiceAccountToken: false,
    containers,
    enableServiceLinks: false,
    ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets } : {}),
    ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector: sortedRecord(nodeSelector) } : {}),
    ...(claim ? { resourceClaims: podClaims(input.name) } : {}),
    restartPolicy: 'Always',
    ...(type.runtimeClassName !== undefined && type.runtimeClassName !== '' ? { runtimeClassName: type.runtimeClassName } : {}),
    // sshd enters main's namespaces through main's first process, which it must be able to see.
    ...(ssh ? { shareProcessNamespace: true } : {}),
    // Keys sorted inside each toleration: the answer's bytes do not depend on how they arrived.
    ...(tolerations.length > 0 ? { tolerations: sortKeysDeep(tolerations) } : {}),
    volumes
  }

  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: podLabels(input.name, input.typeName, type.queue),
      annotations: { [GENERATION_ANNOTATION]: String(input.generation) }
    },
    spec: podSpec
  }
  const annotations = pod.metadata.annotations as Record<string, string>
  annotations[POD_HASH_ANNOTATION] = podHash(pod)
  return pod
}

/**
 * The Pod's claim from the Instance's template. kubernetes-types 1.30 describes the pre-GA
 * `source` shape, so the entry is built apart (no excess-property check);
 * `resourceClaimTemplateName` is the field of core/v1 since Kubernetes 1.31.
 */
function podClaims(instanceName: string): PodSpec['resourceClaims'] {
  const claims = [{ name: ACCELERATOR_CLAIM, resourceClaimTemplateName: claimTemplateName(instanceName) }]
  return claims
}

/**
 * The hash recorded in `worker.gpustack.ai/pod-hash`: over the Pod without that annotation, in
 * canonical JSON, so it depends on content only, never on key order.
 */
export function podHash(pod: KubeObject): string {
  const annotations = { ...pod.metadata.annotations }
  delete annotations[POD_HASH_ANNOTATION]
  return contentHash({ ...pod, metadata: { ...pod.metadata, annotations } })
}

function mainContainer(
  spec: ResolvedSpec,
  type: InstanceTypeSpec,
  accelerator: Record<string, string>,
  ssh: boolean,
  claim: boolean
): Container {
  const container: Container = { name: MAIN_CONTAINER, image: spec.image, imagePullPolicy: spec.imagePullPolicy }
  if (spec.command !== undefined && spec.command.length > 0) container.command = [...spec.command]
  if (spec.args !== undefined && spec.args.length > 0) container.args = [...spec.args]
  if (spec.env !== undefined && spec.env.length > 0) container.env = cloneJson(spec.env)
  const ports = spec.ports
    .filter((p) => !(ssh && isSshPort(p)))
    .map((p) =>
      p.name === undefined ? { containerPort: p.port, protocol: p.protocol } : { containerPort: p.port, name: p.name, protocol: p.protocol }
    )
  if (ports.length > 0) container.ports = ports

  const cpu = spec.resources.cpu ?? type.defaults?.cpu
  const memory = spec.resources.memory ?? type.defaults?.memory
  const amounts = recordOf([
    ...(cpu !== undefined ? [['cpu', String(cpu)] as const] : []),
    ...(memory !== undefined ? [['memory', String(memory)] as const] : []),
    ...Object.entries(accelerator)
  ])
  // requests = limits: a workspace gets exactly what it asked for, and extended resources
  // cannot be overcommitted anyway.
  const claims = claim ? { claims: [{ name: ACCELERATOR_CLAIM }] } : {}
  if (Object.keys(amounts).length > 0) container.resources = { ...claims, limits: { ...amounts }, requests: { ...amounts } }
  else if (claim) container.resources = claims
  container.volumeMounts = [{ name: WORKSPACE_VOLUME, mountPath: spec.workspace.mountPath }]
  return container
}

function workspaceVolume(workspace: ResolvedWorkspace, instanceName: string): Volume {
  if (workspace.persistent !== undefined) {
    return { name: WORKSPACE_VOLUME, persistentVolumeClaim: { claimName: workspaceClaimName(instanceName) } }
  }
  if (workspace.claimName !== undefined) {
    return { name: WORKSPACE_VOLUME, persistentVolumeClaim: { claimName: workspace.claimName } }
  }
  return { name: WORKSPACE_VOLUME, emptyDir: workspace.size === undefined ? {} : { sizeLimit: String(workspace.size) } }
}

/** `spec.nodeName` as required node affinity, so the scheduler and device plugins still run. */
function nodeAffinity(nodeName: string): PodSpec['affinity'] {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] }]
      }
    }
  }
}
