/**
 * The SSH sidecar (docs/instance.md, "The SSH sidecar"): container `sshd`, listed after `main`, and
 * the volume of the key Secret; and the Pod Security check that keeps the hook from rendering a
 * Pod the namespace would refuse.
 *
 * Why the security context looks as it does:
 * - Each session's handover (`deploy/sshd/gpuhooks-handover.c`) joins `main`'s namespaces
 *   (SYS_ADMIN for setns into mount namespaces, SYS_PTRACE to open another container's
 *   /proc/<pid>/ns/* and root), chroots into its root (SYS_CHROOT), empties its bounding set
 *   (SETPCAP) and switches to the workload user (SETUID, SETGID); sshd binds 22
 *   (NET_BIND_SERVICE) and writes login records to the audit log (AUDIT_WRITE). Everything else is
 *   dropped.
 * - `allowPrivilegeEscalation: true`. The Kubernetes API documents the field as always true for
 *   a container that has CAP_SYS_ADMIN, and the API server refuses `false` together with an added
 *   `CAP_SYS_ADMIN`; writing `false` here would promise what the container cannot keep. sshd
 *   itself would not need it: it switches users with setuid(2)/setgid(2) under CAP_SETUID and
 *   CAP_SETGID, which no_new_privs does not block (no_new_privs only stops exec from granting
 *   privilege, through setuid-bit or file-capability binaries). A session sets no_new_privs itself
 *   before it runs the user's shell, so it never holds more than `main` has.
 * - Small cpu and memory requests and no limits: a job started over SSH runs in this cgroup and
 *   must not be killed at a tiny memory limit or throttled at a tiny cpu limit.
 * - No accelerator; only the plugin's visibility resource, which grants access to the devices
 *   `main` holds without charging capacity. Extended resources cannot be overcommitted, so it
 *   goes in requests and limits alike.
 *
 * Choices where the spec is silent: the sidecar's `imagePullPolicy` is left to the server's
 * default (Always for `:latest` or no tag, IfNotPresent otherwise), as for any container whose
 * image an admin names; the key directory is mounted at `/etc/ssh/gpuhooks` (no trailing slash).
 */
import type { Container, Volume } from 'kubernetes-types/core/v1.d.ts'
import { labelOf, type KubeObject } from '../k8s/objects.ts'
import { SSH_KEYS_VOLUME, SSH_PORT, SSHD_CONTAINER } from './labels.ts'
import { SSH_PORT_NAME } from '../api/instance.ts'
import type { SpecProblem } from './problems.ts'

/** Where the key Secret's directory is mounted in `sshd`; its AuthorizedKeysFile points there. */
export const SSH_KEYS_MOUNT_PATH = '/etc/ssh/gpuhooks'
/** The key in the Secret, and the file name in the mounted directory. */
export const AUTHORIZED_KEYS = 'authorized_keys'
/** File mode of the mounted key file: 0400, read-only for root (sshd's StrictModes). */
export const AUTHORIZED_KEYS_MODE = 0o400
/**
 * Capabilities `sshd` adds after dropping ALL: what the handover and sshd need, SETPCAP among them,
 * without which a session cannot empty its bounding set and a root workspace's session would keep
 * SYS_ADMIN and SYS_PTRACE (`deploy/sshd/gpuhooks-handover.c` refuses every session without it).
 * SETPCAP is allowed by Pod Security baseline, so it does not raise the level the Pod needs.
 */
export const SSH_CAPABILITIES = [
  'SYS_ADMIN',
  'SYS_PTRACE',
  'SYS_CHROOT',
  'SETUID',
  'SETGID',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'AUDIT_WRITE'
] as const
/** Volume and path of sshd's host keys: an emptyDir keeps them across sidecar restarts. */
export const SSH_HOST_KEYS_VOLUME = 'ssh-host-keys'
export const SSH_HOST_KEYS_MOUNT_PATH = '/var/lib/gpuhooks-sshd'
/** The sidecar's cpu and memory requests; it has no limits. */
export const SSH_SIDECAR_REQUESTS = { cpu: '50m', memory: '64Mi' } as const

/** The namespace label Pod Security admission enforces. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce'
/** The reason when the namespace's Pod Security level refuses the sidecar. */
export const POD_SECURITY_FORBIDS_SSH = 'PodSecurityForbidsSSH'

/** What the sidecar is built from. */
export interface SshSidecarInput {
  /** The image, from the Setting `instance-ssh-server-image` (or the published default). */
  image: string
  /** The key Secret, `spec.sshPublicKey.name`. */
  secretName: string
  /** The visibility resource and count, from `acceleratorRequests(...).sidecar`; empty for none. */
  visibility: Record<string, string>
}

/** The `sshd` container and the volume of the key Secret. */
export function sshSidecar(input: SshSidecarInput): { container: Container; volumes: Volume[] } {
  const requests: Record<string, string> = { ...SSH_SIDECAR_REQUESTS, ...input.visibility }
  const resources: Container['resources'] =
    Object.keys(input.visibility).length > 0 ? { limits: { ...input.visibility }, requests } : { requests }
  const container: Container = {
    name: SSHD_CONTAINER,
    image: input.image,
    ports: [{ name: SSH_PORT_NAME, containerPort: SSH_PORT, protocol: 'TCP' }],
    resources,
    securityContext: {
      allowPrivilegeEscalation: true,
      capabilities: { add: [...SSH_CAPABILITIES], drop: ['ALL'] },
      privileged: false
    },
    // A directory mount, not a subPath file: the kubelet updates it when the Secret changes.
    volumeMounts: [
      { name: SSH_KEYS_VOLUME, mountPath: SSH_KEYS_MOUNT_PATH, readOnly: true },
      // Host keys survive a sidecar restart, so clients do not see a changed host key.
      { name: SSH_HOST_KEYS_VOLUME, mountPath: SSH_HOST_KEYS_MOUNT_PATH }
    ]
  }
  const volumes: Volume[] = [
    {
      name: SSH_KEYS_VOLUME,
      secret: {
        secretName: input.secretName,
        items: [{ key: AUTHORIZED_KEYS, path: AUTHORIZED_KEYS, mode: AUTHORIZED_KEYS_MODE }]
      }
    },
    { name: SSH_HOST_KEYS_VOLUME, emptyDir: {} }
  ]
  return { container, volumes }
}

/** Reason of {@link podSecurityForbidsPod}. */
export const POD_SECURITY_FORBIDS_POD = 'PodSecurityForbidsPod'

/**
 * Pod Security `restricted` refuses every Instance Pod, with or without SSH: the workload runs the
 * image's own user with the runtime's default capabilities and seccomp profile, which `restricted`
 * forbids (it demands runAsNonRoot, `drop: [ALL]` and a seccomp profile). A workspace image cannot
 * be made to meet that from outside, so the hook reports it instead of rendering a Pod the API
 * server refuses on every sync. A level Pod Security cannot parse is enforced as `restricted`.
 */
export function podSecurityForbidsPod(namespace: KubeObject | undefined): SpecProblem | undefined {
  const enforcing = enforcedBeyond(namespace, ['privileged', 'baseline'])
  if (enforcing === undefined) return undefined
  return {
    field: 'metadata.namespace',
    reason: POD_SECURITY_FORBIDS_POD,
    message:
      `metadata.namespace: ${enforcing.clause}, which refuses a workspace Pod that runs its image as built (user, capabilities, seccomp); ` +
      `set the label to baseline (kubectl label --overwrite namespace ${enforcing.name} ${POD_SECURITY_ENFORCE_LABEL}=baseline), ` +
      'or privileged for SSH'
  }
}

/**
 * The problem when the Instance's namespace enforces a Pod Security level that forbids the
 * sidecar's SYS_ADMIN and SYS_PTRACE: `baseline` and `restricted`, and any value Pod Security
 * cannot parse (it enforces `restricted` then). No label means the cluster default, `privileged`
 * unless the admission configuration says otherwise; that configuration is not visible here: the
 * Pod's creation then fails at the API server, which Metacontroller reports as a sync error on
 * the Instance. `namespace` undefined (not observed) is no problem.
 */
export function podSecurityForbidsSSH(namespace: KubeObject | undefined): SpecProblem | undefined {
  const enforcing = enforcedBeyond(namespace, ['privileged'])
  if (enforcing === undefined) return undefined
  return {
    field: 'spec.sshPublicKey',
    reason: POD_SECURITY_FORBIDS_SSH,
    message:
      `spec.sshPublicKey: ${enforcing.clause}, which forbids the SYS_ADMIN and SYS_PTRACE capabilities the SSH sidecar needs; ` +
      `set the label to privileged (kubectl label --overwrite namespace ${enforcing.name} ${POD_SECURITY_ENFORCE_LABEL}=privileged) ` +
      'or remove spec.sshPublicKey'
  }
}

/**
 * The namespace's enforced Pod Security level when it is none of `allowed`: the namespace's name
 * and a clause that says what it enforces. A level Pod Security cannot parse is enforced as
 * `restricted`, and the clause says so; no label or no namespace observed is undefined.
 */
function enforcedBeyond(namespace: KubeObject | undefined, allowed: readonly string[]): { name: string; clause: string } | undefined {
  const level = labelOf(namespace, POD_SECURITY_ENFORCE_LABEL)
  if (namespace === undefined || level === undefined || allowed.includes(level)) return undefined
  const name = namespace.metadata.name ?? ''
  const enforces = level === 'baseline' || level === 'restricted' ? level : `"${level}" (read as restricted)`
  return { name, clause: `namespace ${name} enforces Pod Security ${enforces} (label ${POD_SECURITY_ENFORCE_LABEL})` }
}
