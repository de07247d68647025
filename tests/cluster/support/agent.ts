/**
 * The workload agent's side of the scenarios that run it for real (docs/workload.md): its RBAC on the
 * workload cluster, the agent as a process with its liveness windows shortened by its documented
 * environment variables, and the kubelets and HAMi's device plugin as the test plays them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { freePorts } from '../../support/ports.ts'
import type { JsonObject } from '../../support/merge.ts'
import { isReason, type KubeClient, type ResourceRef } from './kube.ts'
import type { TestCluster } from './cluster.ts'
import { AGENT_USER, tokenKubeconfig } from './workload-cluster.ts'

const ROOT = join(import.meta.dirname, '..', '..', '..')
const RBAC = 'rbac.authorization.k8s.io/v1'

/** The namespace where the scenarios' Pods run on the workload cluster. */
export const WORK_NAMESPACE = 'work'

export const nodeRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'nodes', name })
export const leaseRef = (name: string): ResourceRef => ({
  apiVersion: 'coordination.k8s.io/v1',
  resource: 'leases',
  namespace: 'kube-node-lease',
  name
})

const RESOURCES = new Map([
  ['ClusterRole', 'clusterroles'],
  ['Role', 'roles'],
  ['ClusterRoleBinding', 'clusterrolebindings'],
  ['RoleBinding', 'rolebindings'],
  ['ServiceAccount', 'serviceaccounts']
])

/** The bindings of the agent's two roles to the user of its token. */
const AGENT_BINDINGS = [
  { kind: 'ClusterRoleBinding', resource: 'clusterrolebindings', role: 'ClusterRole', namespace: undefined },
  { kind: 'RoleBinding', resource: 'rolebindings', role: 'Role', namespace: 'kube-node-lease' }
] as const

/**
 * On the workload cluster: the agent's RBAC from deploy/agent-rbac, its roles bound to the user
 * of the agent's token (cluster-wide, and in kube-node-lease), and the namespace `work`.
 */
export async function grantAgentAccess(wl: KubeClient): Promise<void> {
  for (const doc of parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'agent-rbac', 'workload-cluster.yaml'), 'utf8'))) {
    const object = doc.toJS()
    const resource = RESOURCES.get(String(object.kind))
    if (resource === undefined) throw new Error(`deploy/agent-rbac/workload-cluster.yaml: unexpected kind ${String(object.kind)}`)
    await wl.create({ apiVersion: String(object.apiVersion), resource, namespace: object.metadata.namespace }, object)
  }
  for (const binding of AGENT_BINDINGS) {
    await wl.create(
      { apiVersion: RBAC, resource: binding.resource, namespace: binding.namespace },
      {
        apiVersion: RBAC,
        kind: binding.kind,
        metadata: { name: 'agent-token-user', ...(binding.namespace === undefined ? {} : { namespace: binding.namespace }) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: binding.role, name: 'gpuhooks-workload-agent' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: AGENT_USER }]
      }
    )
  }
  await wl.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORK_NAMESPACE } })
}

/**
 * Writes a stand-in GPUCellPool CRD (an open schema) into `dir` and answers its path: enough for
 * the agent's owner check, where a scenario writes the CellNodeSet itself as the hook would.
 */
export function writeStandInPoolCrd(dir: string): string {
  const file = join(dir, 'gpucellpools-stand-in.json')
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gpucellpools.cells.kubeswift.io' },
      spec: {
        group: 'cells.kubeswift.io',
        scope: 'Namespaced',
        names: { plural: 'gpucellpools', singular: 'gpucellpool', kind: 'GPUCellPool' },
        versions: [
          {
            name: 'v1alpha1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }
          }
        ]
      }
    })
  )
  return file
}

/** A kubeconfig Secret `name` in `namespace` (key `value`), with the admin's opt-in label when `optIn`. */
export async function createKubeconfigSecret(
  kube: KubeClient,
  namespace: string,
  name: string,
  kubeconfig: string,
  optIn = true
): Promise<void> {
  await kube.create(
    { apiVersion: 'v1', resource: 'secrets', namespace },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: optIn ? { 'cells.kubeswift.io/workload-kubeconfig': 'true' } : {} },
      data: { value: Buffer.from(kubeconfig).toString('base64') }
    }
  )
}

/** The agent as a running process. */
export interface AgentProcess {
  child: ChildProcess
  /** The port of its probes and metrics. */
  port: number
  /** The file its stdout and stderr go to. */
  log: string
  /** The last `lines` lines of its log, for a failure message. */
  logTail(lines?: number): string
  /** SIGTERM (the agent finishes its pass and releases its Lease), SIGKILL after 15 s; nothing when it has exited. */
  stop(): Promise<void>
}

/**
 * Starts hooks/agent/main.ts against the infrastructure cluster of `kubeconfig`, logging at debug
 * level (a line per pass) into `dir`/agent.log; `env` adds to or replaces its environment. Passes run every second; a Lease unchanged for 8 s
 * (instead of 90 s) is stale, so sweeps happen within a test. Node runs it with tsx as a loader, so
 * that a signal reaches the agent, not a wrapper process.
 */
export async function startAgent(kubeconfig: string, dir: string, env: NodeJS.ProcessEnv = {}): Promise<AgentProcess> {
  const [port] = (await freePorts(1)) as [number]
  const log = join(dir, 'agent.log')
  const child = spawn(process.execPath, ['--import', 'tsx', 'hooks/agent/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      PORT: String(port),
      RESYNC_SECONDS: '1',
      AGENT_LEASE_STALE_SECONDS: '8',
      AGENT_HEARTBEAT_STALE_SECONDS: '16',
      AGENT_STARTUP_GRACE_SECONDS: '5',
      AGENT_CALL_TIMEOUT_SECONDS: '3',
      LEASE_NAMESPACE: 'default',
      POD_NAME: 'agent-under-test',
      LOG_LEVEL: 'debug',
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const out = createWriteStream(log, { flags: 'a' })
  out.on('error', () => {})
  child.stdout?.pipe(out)
  child.stderr?.pipe(out)
  return {
    child,
    port,
    log,
    logTail(lines = 40) {
      try {
        return readFileSync(log, 'utf8').split('\n').slice(-lines).join('\n')
      } catch {
        return '(no agent log)'
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    }
  }
}

const microTime = (): string => new Date().toISOString().replace('Z', '000Z')

/** One A100 with 80 GiB as HAMi's device plugin registers it on a Node. */
const HAMI_REGISTER = JSON.stringify([{ id: 'GPU-0', count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true }])

/** The kubelets of the workload cluster as a test plays them: Nodes, their Leases renewed every second. */
export class Kubelets {
  private readonly renewals = new Map<string, NodeJS.Timeout>()

  constructor(private readonly wl: KubeClient) {}

  /** The Nodes whose kubelets renew their Lease. */
  renewing(): string[] {
    return [...this.renewals.keys()]
  }

  /**
   * A kubelet starts: registers its Node, Ready, with `labels` (those of its `--node-labels`) and
   * writes its Lease; it renews the Lease every second unless `renew` is false (a VM that stopped).
   */
  async join(name: string, labels: Record<string, string>, renew = true): Promise<void> {
    await this.wl.create(nodeRef(name), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
      spec: {},
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'ok',
            lastHeartbeatTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
            lastTransitionTime: '2026-01-01T00:00:00Z'
          }
        ]
      }
    })
    const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime() }
    try {
      await this.wl.create(leaseRef(name), {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: 'kube-node-lease' },
        spec
      })
    } catch (error) {
      // The Node of an earlier VM of the same name was swept; its Lease stays.
      if (!isReason(error, 'AlreadyExists')) throw error
      await this.wl.patch(leaseRef(name), { spec }, 'merge')
    }
    if (renew) {
      const renewal = setInterval(() => {
        this.wl.patch(leaseRef(name), { spec: { renewTime: microTime() } }, 'merge').catch(() => {
          // The API server is down (an outage step): a kubelet keeps trying.
        })
      }, 1000)
      this.renewals.set(name, renewal)
    }
  }

  /** The VM is gone: its kubelet stops renewing its Lease. */
  stop(name: string): void {
    clearInterval(this.renewals.get(name))
    this.renewals.delete(name)
  }

  stopAll(): void {
    for (const name of this.renewing()) this.stop(name)
  }

  /** HAMi's device plugin registers the Node's GPU (one A100, 81920 MiB, 100 cores). */
  async hamiRegisters(name: string): Promise<void> {
    await this.wl.patch(nodeRef(name), { metadata: { annotations: { 'hami.io/node-nvidia-register': HAMI_REGISTER } } }, 'merge')
  }
}

const podsRef: ResourceRef = { apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE }

/** Writes a Pod's status as its kubelet or the scheduler would: a merge patch of the status subresource. */
export async function setPodStatus(wl: KubeClient, name: string, status: JsonObject): Promise<void> {
  await wl.request('PATCH', `/api/v1/namespaces/${WORK_NAMESPACE}/pods/${name}/status`, { status }, 'application/merge-patch+json')
}

/**
 * A GPU Pod running on `node` with a share of its GPU-0 that HAMi allocated (20000 MiB and 50 cores,
 * as HAMi's scheduler annotations record it).
 */
export async function runAllocatedPod(wl: KubeClient, name: string, node: string, limits: Record<string, string>): Promise<void> {
  await wl.create(podsRef, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: WORK_NAMESPACE,
      annotations: {
        'hami.io/vgpu-node': node,
        'hami.io/vgpu-devices-allocated': 'GPU-0,NVIDIA,20000,50:;',
        'hami.io/vgpu-devices-to-allocate': ';'
      }
    },
    spec: {
      nodeName: node,
      containers: [{ name: 'main', image: 'busybox', resources: { limits } }],
      tolerations: [{ operator: 'Exists' }]
    }
  })
  await setPodStatus(wl, name, { phase: 'Running' })
}

/** A Pod the scheduler could not place: Pending, PodScheduled False with reason Unschedulable. */
export async function createUnschedulablePod(
  wl: KubeClient,
  name: string,
  spec: { limits: Record<string, string>; tolerations: JsonObject[]; nodeSelector: Record<string, string> }
): Promise<void> {
  await wl.create(podsRef, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: WORK_NAMESPACE },
    spec: {
      containers: [{ name: 'main', image: 'busybox', resources: { limits: spec.limits } }],
      tolerations: spec.tolerations,
      nodeSelector: spec.nodeSelector
    }
  })
  await setPodStatus(wl, name, {
    phase: 'Pending',
    conditions: [
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' }
    ]
  })
}

/**
 * The agent as its own ServiceAccount `gpuhooks-workload-agent` in `namespace` (the identity of
 * deploy/agent-rbac/infrastructure-cluster.yaml, applied by the caller): a token of it in a
 * kubeconfig of its own, no Lease (a single replica leads at once), `env` added.
 */
export async function startAgentAsServiceAccount(cluster: TestCluster, namespace: string, env: NodeJS.ProcessEnv): Promise<AgentProcess> {
  const token = (
    await cluster.kubectl(['create', 'token', 'gpuhooks-workload-agent', `--namespace=${namespace}`, '--duration=1h'])
  ).stdout.trim()
  const kubeconfig = join(cluster.dir, 'agent-sa.kubeconfig')
  writeFileSync(kubeconfig, tokenKubeconfig(cluster.server, cluster.caCertPem, token))
  return startAgent(kubeconfig, cluster.dir, { LEASE_NAMESPACE: undefined, LEASE_NAME: undefined, POD_NAMESPACE: namespace, ...env })
}
