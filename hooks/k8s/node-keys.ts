/**
 * Which Node label and taint keys a cell pool may ask for, shared by the cell pool hooks (which
 * refuse them in the spec) and the workload agent (which never writes them, whatever a
 * CellNodeSet says).
 *
 * The workload agent writes a cell's Node with its own rights, which are wider than the cell's
 * kubelet's. A pool author also writes the cell's boot (the join template), so whatever the agent
 * sets on a cell Node is set by someone who controls that Node's kubelet. The rule therefore
 * follows NodeRestriction (kube-apiserver `plugin/pkg/admission/noderestriction`): a label the
 * API server would refuse to a kubelet on its own Node is refused to a pool too, and so are the
 * taints the node lifecycle, the cloud node controller and kubeadm keep for themselves.
 *
 * Labels refused (facts from Kubernetes v1.37: `getForbiddenLabels` of NodeRestriction,
 * `k8s.io/kubelet/pkg/apis.IsKubeletLabel`, `k8s.io/api/core/v1` well_known_labels.go):
 * - `node-restriction.kubernetes.io/` and its subdomains: forbidden to kubelets, so that an admin
 *   can mark the Nodes it trusts and steer workloads (and Secrets) to them;
 * - the control-plane and etcd roles: `node-role.kubernetes.io/control-plane` and
 *   `node-role.kubernetes.io/master` (kubeadm, RKE2), and RKE's `node-role.kubernetes.io/controlplane`
 *   and `node-role.kubernetes.io/etcd`: what system workloads select to run on the control plane
 *   (Rancher's cluster agent, which holds the cluster's admin credentials, prefers Nodes with any of
 *   `controlplane`, `control-plane` or `master`);
 * - every other key under `kubernetes.io`, `k8s.io` or their subdomains that a kubelet may not set
 *   on itself (`kubernetes.io/role` among them), except `node-role.kubernetes.io/<role>` for any
 *   other role (`gpu-cell`), which only names what a Node is for.
 *
 * Taints refused (`k8s.io/api/core/v1` well_known_taints.go, `k8s.io/cloud-provider/api`, kubeadm):
 * - `node.kubernetes.io/`: set and cleared by the node lifecycle controller and the kubelet
 *   (`not-ready`, `unreachable`, `unschedulable`, the pressure taints) or by an admin after a
 *   non-graceful shutdown (`out-of-service`, which force-deletes the Node's Pods and detaches their
 *   volumes);
 * - `node.cloudprovider.kubernetes.io/`: the cloud node controller's (`uninitialized`, `shutdown`);
 * - the same four role keys: kubeadm's control-plane taints and RKE's (`controlplane=true:NoSchedule`,
 *   `etcd=true:NoExecute`), which the workloads meant for the control plane tolerate.
 *
 * `permitted` is the admin's list of exceptions: a key, or a prefix ending in `/` for a whole
 * namespace (`node-restriction.kubernetes.io/`).
 */

import { isDnsSubdomain, isQualifiedName } from './names.ts'

/** Labels a kubelet may set on itself under NodeRestriction, beside the allowed namespaces. */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region'
])

/** The role labels and taints of a control-plane or etcd Node: kubeadm's and RKE2's, then RKE's. */
const CONTROL_PLANE_KEYS: ReadonlySet<string> = new Set([
  'node-role.kubernetes.io/control-plane',
  'node-role.kubernetes.io/master',
  'node-role.kubernetes.io/controlplane',
  'node-role.kubernetes.io/etcd'
])

const ROLE_PREFIX = 'node-role.kubernetes.io/'

function inDomain(namespace: string, domain: string): boolean {
  return namespace === domain || namespace.endsWith(`.${domain}`)
}

/** The part of `key` before `/`, or `''` for a key without a prefix. */
function namespaceOf(key: string): string {
  const slash = key.indexOf('/')
  return slash < 0 ? '' : key.slice(0, slash)
}

function isKubernetesNamespace(namespace: string): boolean {
  return inDomain(namespace, 'kubernetes.io') || inDomain(namespace, 'k8s.io')
}

/**
 * True when a kubelet may set label `key` on its own Node (NodeRestriction, and kubelet's own
 * check of `--node-labels`): any key outside `kubernetes.io`, `k8s.io` and their subdomains, the
 * well-known labels above, and keys under `[*.]kubelet.kubernetes.io/` or `[*.]node.kubernetes.io/`.
 * A kubelet given any other key in `--node-labels` refuses to start, so `{{ nodeLabels }}` carries
 * only these; the workload agent sets the others once the Node has joined.
 */
export function kubeletMaySetLabel(key: string): boolean {
  const namespace = namespaceOf(key)
  if (inDomain(namespace, 'node-restriction.kubernetes.io')) return false
  if (!isKubernetesNamespace(namespace)) return true
  if (KUBELET_LABELS.has(key)) return true
  return inDomain(namespace, 'kubelet.kubernetes.io') || inDomain(namespace, 'node.kubernetes.io')
}

/** True when the admin's list names `key` or a namespace prefix (ending in `/`) of it. */
export function isPermitted(key: string, permitted: readonly string[]): boolean {
  return permitted.some((entry) => (entry.endsWith('/') ? key.startsWith(entry) : key === entry))
}

/**
 * Why a pool may not put label `key` on its Nodes (a clause to follow "is refused: "), or
 * undefined when it may.
 */
export function restrictedLabelReason(key: string, permitted: readonly string[] = []): string | undefined {
  if (isPermitted(key, permitted)) return undefined
  const namespace = namespaceOf(key)
  if (inDomain(namespace, 'node-restriction.kubernetes.io')) {
    return 'node-restriction.kubernetes.io/ labels mark the Nodes an admin trusts; NodeRestriction forbids a kubelet to set them'
  }
  if (CONTROL_PLANE_KEYS.has(key))
    return 'it marks a control-plane Node (or, on RKE, an etcd Node), where system workloads and their credentials are steered'
  if (kubeletMaySetLabel(key) || key.startsWith(ROLE_PREFIX)) return undefined
  return `its prefix ${namespace} is reserved to Kubernetes and NodeRestriction forbids a kubelet to set it; only a cluster admin may`
}

/**
 * Why a pool may not put a taint with key `key` on its Nodes (a clause to follow "is refused: "),
 * or undefined when it may.
 */
export function restrictedTaintReason(key: string, permitted: readonly string[] = []): string | undefined {
  if (isPermitted(key, permitted)) return undefined
  const namespace = namespaceOf(key)
  if (namespace === 'node.kubernetes.io') {
    return 'node.kubernetes.io/ taints belong to the node lifecycle controller and the kubelet (out-of-service force-deletes the Node Pods)'
  }
  if (namespace === 'node.cloudprovider.kubernetes.io')
    return 'node.cloudprovider.kubernetes.io/ taints belong to the cloud node controller'
  if (CONTROL_PLANE_KEYS.has(key))
    return "it is the control-plane taint (or RKE's etcd taint), which workloads meant for the control plane tolerate"
  return undefined
}

/** The most entries an admin's list of permitted keys may hold. */
export const MAX_PERMITTED_NODE_KEYS = 64

/**
 * The admin's list of permitted Node label and taint keys (`PERMITTED_NODE_KEYS`, read by the hook
 * service and the workload agent alike): comma-separated entries, each a key (`node-role.kubernetes.io/master`)
 * or a prefix ending in `/` for every key under it (`node-restriction.kubernetes.io/`); blanks
 * around entries and empty entries are ignored. Every entry that is neither is named in `problems`.
 */
export function parsePermittedNodeKeys(raw: string | undefined, variable = 'PERMITTED_NODE_KEYS'): { keys: string[]; problems: string[] } {
  const entries = (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  const problems: string[] = []
  if (entries.length > MAX_PERMITTED_NODE_KEYS) {
    problems.push(`${variable} names ${entries.length} keys; at most ${MAX_PERMITTED_NODE_KEYS} are allowed`)
    return { keys: [], problems }
  }
  const keys: string[] = []
  for (const entry of entries) {
    const valid = entry.endsWith('/') ? isDnsSubdomain(entry.slice(0, -1)) : isQualifiedName(entry)
    if (valid) keys.push(entry)
    else
      problems.push(
        `${variable} entry ${JSON.stringify(entry.slice(0, 80))} is neither a label key (an optional DNS subdomain prefix and /, then a name) nor a prefix (a DNS subdomain and /)`
      )
  }
  return { keys: [...new Set(keys)].sort(), problems }
}
