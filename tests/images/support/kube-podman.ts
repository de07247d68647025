/**
 * A container of a rendered Kubernetes Pod (the chart's Deployments, the Pod the Instance hook
 * answers) as `podman run`/`podman create` arguments, so that the image tests start a container
 * exactly as a kubelet would: user and groups, capabilities, read-only root, no_new_privs,
 * seccomp, environment, command and arguments, volumes, memory limit. The test never restates
 * any of it; it reads the rendered object.
 *
 * Every field is either translated, or ignored for a stated reason, or refused: a field this
 * module does not know (a new securityContext setting in the chart, say) fails the test that
 * uses it instead of being dropped unseen.
 *
 * Kubernetes facts this follows (the API reference of core/v1 and the kubelet's defaults):
 * container securityContext fields override the Pod's; `command` replaces the image's
 * ENTRYPOINT and drops its CMD, `args` replaces CMD; `fsGroup` and `supplementalGroups` are added
 * to the process's groups; with no seccompProfile the kubelet runs a container Unconfined (unless
 * it runs with --seccomp-default); `runAsNonRoot` refuses to start a container whose user is 0 or
 * is not numeric; in command, args and env values `$$` stands for `$` and `$(NAME)` for a
 * variable (refused here: none of the rendered objects uses one).
 */
import type { Container, EnvVar, PodSecurityContext, PodSpec, SecurityContext, Volume } from 'kubernetes-types/core/v1.d.ts'

/** What a container's translation needs beyond the Pod. */
export interface RunContext {
  /** The Pod's name and namespace: what `fieldRef` metadata.name and metadata.namespace give. */
  podName: string
  namespace: string
  /** Host directories standing for volumes, by volume name (required for secret and PVC volumes). */
  volumes: Record<string, string>
  /** The image to run (the rendered one names a registry that is not reachable here). */
  image: string
  /** The image's USER (`podman image inspect`), for runAsNonRoot's check. */
  imageUser: string
  /**
   * What the kubelet gives a Pod that mounts its service account token: a directory holding
   * `token`, `ca.crt` and `namespace` (mounted at /var/run/secrets/kubernetes.io/serviceaccount)
   * and the API server's address (KUBERNETES_SERVICE_HOST and _PORT). Required unless the Pod
   * sets `automountServiceAccountToken: false`.
   */
  serviceAccount?: { dir: string; host: string; port: number }
}

/** Where the kubelet mounts a Pod's service account token. */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount'

/** `podman run`/`create` arguments: flags before the image, the image, and what follows it. */
export interface PodmanRun {
  flags: string[]
  image: string
  args: string[]
}

const CONTAINER_IGNORED: Record<string, string> = {
  name: 'names the podman container instead',
  image: 'replaced by RunContext.image',
  imagePullPolicy: 'images are local: podman runs with --pull=never',
  ports: 'the test decides the network (host, or the pod network of its own bridge)',
  readinessProbe: 'the tests wait on their own conditions (a port answering, a log line)',
  livenessProbe: 'the tests wait on their own conditions (a port answering, a log line)'
}
const POD_IGNORED: Record<string, string> = {
  affinity: 'one machine',
  topologySpreadConstraints: 'one machine',
  nodeSelector: 'one machine',
  tolerations: 'one machine',
  serviceAccountName: 'the token in RunContext.serviceAccount is that account’s',
  enableServiceLinks: 'no Services here, so no service link variables either way',
  restartPolicy: 'the tests start and restart containers themselves',
  imagePullSecrets: 'images are local'
}

function refuse(path: string, value: unknown): never {
  throw new Error(
    `tests/images/support/kube-podman.ts does not translate ${path}=${JSON.stringify(value)}; teach it, or start this Pod another way`
  )
}

function checkKeys(object: object, path: string, known: readonly string[], ignored: Record<string, string> = {}): void {
  for (const [key, value] of Object.entries(object)) {
    if (!known.includes(key) && !Object.hasOwn(ignored, key)) refuse(`${path}.${key}`, value)
  }
}

const POD_KNOWN = [
  'containers',
  'securityContext',
  'volumes',
  'shareProcessNamespace',
  'terminationGracePeriodSeconds',
  'automountServiceAccountToken'
]

function checkPod(pod: PodSpec): void {
  checkKeys(pod, 'spec', POD_KNOWN, POD_IGNORED)
}

/** The Pod-level settings of `pod` that `podman pod create` (or a lone `podman run`) takes. */
export function podFlags(pod: PodSpec, podName: string): string[] {
  checkPod(pod)
  // A Pod always shares its network, IPC and UTS namespaces; the PID namespace on request.
  const share = ['net', 'ipc', 'uts', ...(pod.shareProcessNamespace === true ? ['pid'] : [])]
  return [`--hostname=${podName}`, `--share=${share.join(',')}`]
}

/** `podman run`/`create` arguments for the container `name` of `pod`. */
export function containerRun(pod: PodSpec, name: string, context: RunContext): PodmanRun {
  checkPod(pod)
  const container = pod.containers.find((c) => c.name === name)
  if (container === undefined) throw new Error(`the Pod has no container ${name}: ${pod.containers.map((c) => c.name).join(', ')}`)
  checkKeys(
    container,
    `containers[${name}]`,
    ['command', 'args', 'env', 'resources', 'securityContext', 'volumeMounts', 'workingDir'],
    CONTAINER_IGNORED
  )
  const flags = [
    '--pull=never',
    ...securityFlags(pod.securityContext ?? {}, container.securityContext ?? {}, name, context.imageUser),
    ...(container.env ?? []).map((v) => `--env=${v.name}=${envValue(v, name, context)}`),
    ...mountFlags(pod.volumes ?? [], container, context),
    ...serviceAccountFlags(pod, context),
    ...resourceFlags(container, name),
    ...(pod.terminationGracePeriodSeconds !== undefined ? [`--stop-timeout=${pod.terminationGracePeriodSeconds}`] : []),
    ...(container.workingDir !== undefined ? [`--workdir=${container.workingDir}`] : [])
  ]
  const expand = (word: string): string => expanded(word, `containers[${name}] command/args`)
  // `command` replaces ENTRYPOINT and, as in Kubernetes, an image CMD is not appended to it.
  if (container.command !== undefined) flags.push(`--entrypoint=${JSON.stringify(container.command.map(expand))}`)
  return { flags, image: context.image, args: (container.args ?? []).map(expand) }
}

/** A command, argument or env value as the kubelet passes it: `$$` is `$`; `$(NAME)` is refused. */
function expanded(word: string, path: string): string {
  return word.replace(/\$(\$|\()/g, (match) => (match === '$$' ? '$' : refuse(path, word)))
}

type AnySecurity = SecurityContext & PodSecurityContext

function securityFlags(pod: PodSecurityContext, container: SecurityContext, name: string, imageUser: string): string[] {
  checkKeys(pod, 'spec.securityContext', ['runAsUser', 'runAsGroup', 'runAsNonRoot', 'fsGroup', 'supplementalGroups', 'seccompProfile'])
  checkKeys(container, `containers[${name}].securityContext`, [
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'seccompProfile',
    'capabilities',
    'privileged',
    'readOnlyRootFilesystem',
    'allowPrivilegeEscalation'
  ])
  const merged: AnySecurity = { ...pod, ...container }
  const flags: string[] = []
  if (merged.runAsUser !== undefined)
    flags.push(`--user=${merged.runAsUser}${merged.runAsGroup !== undefined ? `:${merged.runAsGroup}` : ''}`)
  else if (merged.runAsGroup !== undefined) refuse(`containers[${name}].securityContext.runAsGroup without runAsUser`, merged.runAsGroup)
  if (merged.runAsNonRoot === true) {
    const user = merged.runAsUser !== undefined ? String(merged.runAsUser) : (imageUser.split(':')[0] ?? '')
    if (!/^[0-9]+$/.test(user) || Number(user) === 0)
      throw new Error(`containers[${name}]: runAsNonRoot and the user is "${user}": a kubelet would not start it`)
  }
  for (const group of [...(pod.fsGroup !== undefined ? [pod.fsGroup] : []), ...(pod.supplementalGroups ?? [])])
    flags.push(`--group-add=${group}`)
  if (merged.privileged === true) refuse(`containers[${name}].securityContext.privileged`, true)
  if (merged.readOnlyRootFilesystem === true) flags.push('--read-only', '--read-only-tmpfs=false')
  if (merged.allowPrivilegeEscalation === false) flags.push('--security-opt=no-new-privileges')
  const seccomp = merged.seccompProfile?.type ?? 'Unconfined'
  if (seccomp === 'Unconfined') flags.push('--security-opt=seccomp=unconfined')
  else if (seccomp !== 'RuntimeDefault') refuse(`containers[${name}].securityContext.seccompProfile`, merged.seccompProfile)
  const capabilities = container.capabilities ?? {}
  checkKeys(capabilities, `containers[${name}].securityContext.capabilities`, ['add', 'drop'])
  for (const cap of capabilities.drop ?? []) flags.push(`--cap-drop=${cap === 'ALL' ? 'all' : cap}`)
  for (const cap of capabilities.add ?? []) flags.push(`--cap-add=${cap}`)
  return flags
}

function envValue(variable: EnvVar, name: string, context: RunContext): string {
  if (variable.value !== undefined) return expanded(variable.value, `containers[${name}].env[${variable.name}]`)
  const field = variable.valueFrom?.fieldRef?.fieldPath
  if (field === 'metadata.name') return context.podName
  if (field === 'metadata.namespace') return context.namespace
  if (variable.valueFrom === undefined) return ''
  return refuse(`containers[${name}].env[${variable.name}].valueFrom`, variable.valueFrom)
}

/** Kubernetes' quantity suffixes, for an emptyDir's sizeLimit and a memory limit. */
function bytes(quantity: string, path: string): number {
  const match = /^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity)
  if (match === null) return refuse(path, quantity)
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[match[2] ?? ''] ?? 1
  return Number(match[1]) * unit
}

function mountFlags(volumes: Volume[], container: Container, context: RunContext): string[] {
  return (container.volumeMounts ?? []).map((mount) => {
    checkKeys(mount, `containers[${container.name}].volumeMounts[${mount.name}]`, ['name', 'mountPath', 'readOnly'])
    const volume = volumes.find((v) => v.name === mount.name)
    if (volume === undefined) throw new Error(`containers[${container.name}] mounts ${mount.name}, which the Pod does not declare`)
    const kinds = Object.keys(volume).filter((k) => k !== 'name')
    const host = context.volumes[mount.name]
    const ro = mount.readOnly === true ? ',ro' : ''
    if (host !== undefined) return `--mount=type=bind,source=${host},destination=${mount.mountPath}${ro}`
    if (kinds.length === 1 && volume.emptyDir !== undefined) {
      // A kubelet's emptyDir is a fresh directory, mode 0777; here a tmpfs of that mode (one
      // container's only: a volume two containers share is given a host directory instead).
      const size =
        volume.emptyDir.sizeLimit !== undefined
          ? `,tmpfs-size=${bytes(String(volume.emptyDir.sizeLimit), `volumes[${mount.name}].emptyDir.sizeLimit`)}`
          : ''
      return `--mount=type=tmpfs,destination=${mount.mountPath},tmpfs-mode=0777${size}${ro}`
    }
    return refuse(`volumes[${mount.name}] (give it a host directory in RunContext.volumes)`, volume)
  })
}

function serviceAccountFlags(pod: PodSpec, context: RunContext): string[] {
  if (pod.automountServiceAccountToken === false) return []
  const account = context.serviceAccount
  if (account === undefined) throw new Error('the Pod mounts its service account token: give RunContext.serviceAccount')
  return [
    `--mount=type=bind,source=${account.dir},destination=${SERVICE_ACCOUNT_MOUNT},ro`,
    `--env=KUBERNETES_SERVICE_HOST=${account.host}`,
    `--env=KUBERNETES_SERVICE_PORT=${account.port}`
  ]
}

function resourceFlags(container: Container, name: string): string[] {
  const resources = container.resources ?? {}
  checkKeys(resources, `containers[${name}].resources`, ['limits', 'requests'])
  const flags: string[] = []
  for (const [resource, amount] of Object.entries(resources.limits ?? {})) {
    if (resource === 'memory') flags.push(`--memory=${bytes(String(amount), `containers[${name}].resources.limits.memory`)}`)
    // A cpu limit is a CFS quota, which changes no behaviour these tests look at.
    else if (resource !== 'cpu') refuse(`containers[${name}].resources.limits.${resource}`, amount)
  }
  for (const resource of Object.keys(resources.requests ?? {})) {
    // Requests are the scheduler's; the runtime sees only cpu shares.
    if (resource !== 'cpu' && resource !== 'memory')
      refuse(`containers[${name}].resources.requests.${resource}`, resources.requests?.[resource])
  }
  return flags
}
