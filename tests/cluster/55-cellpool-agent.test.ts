/**
 * The cell pool controller and the workload agent together (cellpool.md; workload.md): the
 * `gpuhooks-cellpool` driver plays Metacontroller against the hook service, the workload agent
 * runs as a real process against a second kube-apiserver (the workload cluster), and the test
 * plays only KubeSwift (guest statuses: devices, Running, addresses) and the kubelets (Nodes
 * registered with the labels of the rendered `--node-labels`, Lease renewals, HAMi's register
 * annotation, Pods). Nothing but the agent writes a CellNodeSet's status.
 *
 * Covered: a pool of one whose cell goes from Pending to Ready through the agent's rows, with the
 * labels and taints on its Node put there by the agent; an autoscaling pool that a pending GPU Pod
 * fitting its Nodes scales from 1 to 2, and that, once the demand is gone, drains its idle cell
 * (the agent cordons the Node), removes the guest, and whose orphan Node the agent sweeps once
 * its Lease stops being renewed. The agent's liveness windows are shortened by its documented
 * environment variables; everything is polled for, nothing is timed.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { freePorts } from '../support/ports.ts'
import { eventually, startEnv } from './support/env.ts'
import { isReason, type ResourceRef } from './support/kube.ts'
import { reader } from './support/reads.ts'
import { AGENT_USER, binariesDir, startWorkloadCluster } from './support/workload-cluster.ts'
import type { JsonObject } from '../support/merge.ts'

/** Scenario reads are loose views, checked by value. */
type Obj = any

const ROOT = join(import.meta.dirname, '..', '..')
const NS = 'cells'
const CELLS = 'cells.kubeswift.io/v1alpha1'
const POOL_UID_LABEL = 'cells.kubeswift.io/pool-uid'
const INSTANCE_LABEL = 'cells.kubeswift.io/instance'

const env = await startEnv({ extraCrds: [join(import.meta.dirname, 'fixtures', 'kubeswift-crds.yaml')] })
const { kube, cluster } = env
const workload = await startWorkloadCluster(cluster, binariesDir())
const wl = workload.admin
const driver = env.driver('gpuhooks-cellpool')
// Assigned once the teardown that stops it is registered.
let agent: ChildProcess | undefined
/** Lease renewals of the test's kubelets, by Node name. */
const kubelets = new Map<string, NodeJS.Timeout>()
t.teardown(async () => {
  for (const timer of kubelets.values()) clearInterval(timer)
  await stopAgent()
  await workload.stop()
  workload.close()
  await env.stop()
})

const infra = reader<Obj>(kube)
const work = reader<Obj>(wl)
const poolRef = (name: string): ResourceRef => ({ apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name })
const cnsRef = (name: string): ResourceRef => ({ apiVersion: CELLS, resource: 'cellnodesets', namespace: NS, name })
const guestsRef: ResourceRef = { apiVersion: 'swift.kubeswift.io/v1alpha1', resource: 'swiftguests', namespace: NS }
const secretRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'secrets', namespace: NS, name })
const nodeRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'nodes', name })
const leaseRef = (name: string): ResourceRef => ({
  apiVersion: 'coordination.k8s.io/v1',
  resource: 'leases',
  namespace: 'kube-node-lease',
  name
})
const podsRef: ResourceRef = { apiVersion: 'v1', resource: 'pods', namespace: 'work' }
const condition = (o: Obj, type: string): Obj => (o.status?.conditions ?? []).find((c: Obj) => c.type === type)
const cellOf = (p: Obj, name: string): Obj => (p.status?.cells ?? []).find((c: Obj) => c.name === name)
const rowOf = (c: Obj, name: string): Obj => (c?.status?.nodes ?? []).find((r: Obj) => r.name === name)
const phases = (p: Obj): string[] => (p.status?.cells ?? []).map((c: Obj) => `${c.name}:${c.phase}`)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

// --- the workload cluster: the agent's RBAC from deploy/agent-rbac, bound to its token's user ---
for (const doc of parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'agent-rbac', 'workload-cluster.yaml'), 'utf8'))) {
  const object = doc.toJS()
  const resource = (
    {
      ClusterRole: 'clusterroles',
      Role: 'roles',
      ClusterRoleBinding: 'clusterrolebindings',
      RoleBinding: 'rolebindings',
      ServiceAccount: 'serviceaccounts'
    } as Record<string, string>
  )[object.kind as string] as string
  await wl.create({ apiVersion: String(object.apiVersion), resource, namespace: object.metadata.namespace }, object)
}
await wl.create(
  { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'clusterrolebindings' },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'agent-token-user' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'gpuhooks-workload-agent' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: AGENT_USER }]
  }
)
await wl.create(
  { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'rolebindings', namespace: 'kube-node-lease' },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'agent-token-user', namespace: 'kube-node-lease' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gpuhooks-workload-agent' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: AGENT_USER }]
  }
)
await wl.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'work' } })

// --- the infrastructure cluster: the namespace, the join Secret, the labelled kubeconfig Secret ---
const JOIN = '#cloud-config\nruncmd:\n  - kubeadm join --node-name {{ nodeName }} --node-labels {{ nodeLabels }}\n'
await cluster.kubectl(['create', 'namespace', NS])
await cluster.kubectl(['wait', '--for=create', '-n', NS, 'serviceaccount/default', '--timeout=60s'])
await cluster.kubectl(['create', 'secret', 'generic', 'join', '-n', NS, `--from-literal=user-data=${JOIN}`])
await kube.create(
  { apiVersion: 'v1', resource: 'secrets', namespace: NS },
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'wl-kubeconfig', namespace: NS, labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
    data: { value: Buffer.from(workload.agentKubeconfig()).toString('base64') }
  }
)

// --- the agent, a real process, with the liveness windows shortened ---
const [agentPort] = (await freePorts(1)) as [number]
const agentLog = join(cluster.dir, 'agent.log')
// node itself, with tsx as a loader: a signal reaches the agent, not a wrapper process.
// eslint-disable-next-line prefer-const -- declared before the teardown that stops it
agent = spawn(process.execPath, ['--import', 'tsx', 'hooks/agent/main.ts'], {
  cwd: ROOT,
  env: {
    ...process.env,
    KUBECONFIG: cluster.kubeconfig,
    PORT: String(agentPort),
    RESYNC_SECONDS: '1',
    AGENT_LEASE_STALE_SECONDS: '8',
    AGENT_HEARTBEAT_STALE_SECONDS: '16',
    AGENT_STARTUP_GRACE_SECONDS: '5',
    AGENT_CALL_TIMEOUT_SECONDS: '3',
    LEASE_NAMESPACE: 'default',
    POD_NAME: 'agent-under-test',
    LOG_LEVEL: 'debug'
  },
  stdio: ['ignore', 'pipe', 'pipe']
})
{
  const out = createWriteStream(agentLog, { flags: 'a' })
  out.on('error', () => {})
  agent.stdout?.pipe(out)
  agent.stderr?.pipe(out)
}
/** SIGTERM (the agent finishes its pass and releases its Lease), SIGKILL after 15 s. */
async function stopAgent(): Promise<void> {
  const child = agent
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}
const agentLogTail = (): string => {
  try {
    return readFileSync(agentLog, 'utf8').split('\n').slice(-30).join('\n')
  } catch {
    return '(no agent log)'
  }
}

// --- the test's kubelets ---
const microTime = (): string => new Date().toISOString().replace('Z', '000Z')
const HAMI_REGISTER = JSON.stringify([{ id: 'GPU-0', count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true }])

/** The labels a cell's kubelet registers: the `--node-labels` of its rendered bootstrap Secret. */
async function registrationLabels(cell: string): Promise<Record<string, string>> {
  const secret = await infra.must(secretRef(`${cell}-bootstrap`))
  const text = Buffer.from(String(secret.data['user-data']), 'base64').toString()
  const flag = /--node-labels (\S+)/.exec(text)
  if (flag?.[1] === undefined) throw new Error(`no --node-labels in ${cell}'s bootstrap: ${text}`)
  return Object.fromEntries(flag[1].split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
}

/** A kubelet starts: registers its Node (Ready) with the bootstrap's labels and renews its Lease every second. */
async function kubeletJoins(cell: string): Promise<void> {
  const labels = await registrationLabels(cell)
  await wl.create(
    { apiVersion: 'v1', resource: 'nodes' },
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: cell, labels: { 'kubernetes.io/hostname': cell, ...labels } },
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
    }
  )
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: cell, namespace: 'kube-node-lease' },
    spec: { holderIdentity: cell, leaseDurationSeconds: 40, renewTime: microTime() }
  }
  if ((await work.get(leaseRef(cell))) === undefined) await wl.create(leaseRef(cell), lease)
  else await wl.patch(leaseRef(cell), { spec: lease.spec }, 'merge')
  kubelets.set(
    cell,
    setInterval(() => {
      wl.patch(leaseRef(cell), { spec: { renewTime: microTime() } }, 'merge').catch(() => {})
    }, 1000)
  )
}
/** The VM is gone: its kubelet stops renewing its Lease. */
function kubeletStops(cell: string): void {
  clearInterval(kubelets.get(cell))
  kubelets.delete(cell)
}
/** HAMi's device plugin registers the cell's GPU on its Node. */
async function hamiRegisters(cell: string): Promise<void> {
  await wl.patch(nodeRef(cell), { metadata: { annotations: { 'hami.io/node-nvidia-register': HAMI_REGISTER } } }, 'merge')
}

// --- KubeSwift's part ---
async function guests(): Promise<Obj[]> {
  return (await kube.list(guestsRef)).body as Obj[]
}
/** A guest without a status gets one of a booted VM: its GPU bound, Running, addresses. */
async function kubeswiftBoots(name: string): Promise<void> {
  const g = await infra.must({ ...guestsRef, name })
  g.status = {
    phase: 'Running',
    gpu: { devices: ['0000:3b:00.0'], nodeName: 'gpu-host-1' },
    network: {
      primaryIP: '10.0.0.5',
      interfaces: [
        { name: 'primary', ip: '10.0.0.5' },
        { name: 'routable', ip: '192.0.2.10' }
      ]
    }
  }
  await kube.updateStatus({ ...guestsRef, name }, g)
}

// --- Metacontroller's part, played by the driver ---
/** Every cell phase the pool's status showed after a sync pass, in order (repeats collapsed). */
const seen: string[] = []

/**
 * Syncs the pool until a pass writes nothing (at most 6 passes). A write that meets the agent's
 * concurrent status write of the CellNodeSet (409) is what Metacontroller retries on its next
 * sync; anything else fails the test.
 */
async function sync(pool: string): Promise<void> {
  for (let pass = 0; pass < 6; pass++) {
    let quiet = false
    try {
      quiet = (await driver.syncOnce({ namespace: NS, name: pool })).writes.length === 0
    } catch (err) {
      if (!isReason(err, 'Conflict') && !/Conflict|the object has been modified/.test(String(err))) throw err
    }
    const p = await infra.get(poolRef(pool))
    if (p !== undefined) for (const phase of phases(p)) if (seen[seen.length - 1] !== phase) seen.push(phase)
    if (quiet) return
  }
}

/**
 * Rounds of Metacontroller, then `world` (the test's KubeSwift and kubelets), until `check`
 * holds for the pool.
 */
async function until(
  pool: string,
  what: string,
  check: (p: Obj) => boolean,
  options: { seconds?: number; world?: () => Promise<void> } = {}
): Promise<Obj> {
  const deadline = Date.now() + (options.seconds ?? 120) * 1000
  for (;;) {
    await sync(pool)
    await options.world?.()
    const p = await infra.must(poolRef(pool))
    if (check(p)) return p
    if (Date.now() > deadline) {
      const cns = await infra.get(cnsRef(pool))
      throw new Error(
        `timed out waiting for ${what}: cells ${JSON.stringify(p.status?.cells?.map((c: Obj) => [c.name, c.phase, c.reason, c.message]))}\n` +
          `conditions ${JSON.stringify(p.status?.conditions?.map((c: Obj) => [c.type, c.status, c.reason]))}\nCellNodeSet status ${JSON.stringify(cns?.status)}\nagent log:\n${agentLogTail()}`
      )
    }
    await sleep(1000)
  }
}

function pool(name: string, replicas: number, extra: JsonObject = {}): JsonObject {
  return {
    apiVersion: CELLS,
    kind: 'GPUCellPool',
    metadata: { name, namespace: NS },
    spec: {
      ...extra,
      replicas,
      cell: {
        guestTemplate: {
          guestClassRef: { name: 'gpu-worker' },
          imageRef: { name: 'gpu-noble' },
          interfaces: [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'lan' } }]
        },
        gpu: { dra: { resourceClaimTemplateName: 'single-vfio-gpu' } },
        nodeIPFrom: 'routable'
      },
      bootstrap: { joinSecretRef: { name: 'join' } },
      workloadCluster: {
        kubeconfigSecretRef: { name: 'wl-kubeconfig' },
        node: {
          // The role label is one a kubelet may not set on itself: only the agent puts it there.
          labels: { 'gpu.pool': name, 'node-role.kubernetes.io/gpu-cell': '' },
          annotations: { 'example.com/owner': 'ml-team' },
          taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]
        }
      }
    }
  }
}

t.test("a pool of one: Pending → … → Ready through the agent's rows", async (t) => {
  const name = 'solo'
  const cell = 'solo-0'
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(name, 1)) })
  const reachable = await until(
    name,
    'the agent to observe the pool',
    (p) => condition(p, 'WorkloadClusterReachable')?.status === 'True' && cellOf(p, cell) !== undefined
  )
  const uid = String(reachable.metadata.uid)
  const cns = await infra.must(cnsRef(name))
  t.ok((cns.metadata.finalizers ?? []).includes('cells.kubeswift.io/workload-nodes'), 'the agent serves the CellNodeSet the hook rendered')

  // The guest is created only once the agent has reported the cell's Node absent.
  await eventually(
    'the guest to be created',
    async () => {
      await sync(name)
      return (await guests()).some((g: Obj) => g.metadata.name === cell) ? true : undefined
    },
    60_000
  )
  const absent = rowOf(await infra.must(cnsRef(name)), cell)
  t.same(absent, { name: cell, present: false }, "the agent's row: no Node yet")

  await kubeswiftBoots(cell)
  const joining = await until(name, 'Joining', (p) => cellOf(p, cell)?.phase === 'Joining')
  t.equal(cellOf(joining, cell).reason, 'NodeNotRegistered')

  await kubeletJoins(cell)
  const guest = (await guests()).find((g: Obj) => g.metadata.name === cell)
  const awaiting = await until(name, 'AwaitingGPUCapacity', (p) => cellOf(p, cell)?.phase === 'AwaitingGPUCapacity')
  t.equal(cellOf(awaiting, cell).reason, 'TooFewDevices')
  const node = await work.must(nodeRef(cell))
  t.match(
    node.metadata.labels,
    {
      'gpu.pool': name,
      'node-role.kubernetes.io/gpu-cell': '',
      'cells.kubeswift.io/pool': name,
      [POOL_UID_LABEL]: uid,
      'cells.kubeswift.io/cell': cell,
      'cells.kubeswift.io/cell-index': '0',
      [INSTANCE_LABEL]: guest.metadata.uid
    },
    "the agent put the pool's labels and the instance on the Node"
  )
  t.equal(node.metadata.annotations['example.com/owner'], 'ml-team')
  // The API server's TaintNodesByCondition adds not-ready at creation (no node controller here
  // removes it); the agent adds its own taint beside it and leaves that one alone.
  t.same(
    node.spec.taints.filter((x: Obj) => x.key === 'gpu'),
    [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
    "the agent put the pool's taint on the Node"
  )
  t.not(node.spec.unschedulable, true)

  await hamiRegisters(cell)
  const ready = await until(name, 'Ready', (p) => cellOf(p, cell)?.phase === 'Ready' && p.status?.readyCells === 1)
  t.same([condition(ready, 'Ready')?.status, ready.status.replicas], ['True', 1])
  const row = rowOf(await infra.must(cnsRef(name)), cell)
  t.match(row, {
    present: true,
    instance: guest.metadata.uid,
    poolUID: uid,
    live: true,
    ready: true,
    unschedulable: false,
    registration: 'Parsed',
    allocations: { read: true, pods: 0, inFlight: false }
  })
  const order = ['Pending', 'Joining', 'AwaitingGPUCapacity', 'Ready'].map((phase) => seen.indexOf(`${cell}:${phase}`))
  t.ok(
    order.every((i, k) => i >= 0 && (k === 0 || i > (order[k - 1] as number))),
    `phases in order: ${seen.join(' ')}`
  )
})

/**
 * KubeSwift and the kubelets of a pool, as they act on their own: a new guest boots; a running
 * guest's kubelet registers its Node and HAMi its GPU; a guest that is gone stops renewing.
 */
async function playCells(pool: string): Promise<void> {
  const mine = (await guests()).filter((g: Obj) => g.metadata.labels?.['cells.kubeswift.io/pool'] === pool)
  for (const g of mine) {
    const name = String(g.metadata.name)
    if (g.status?.phase === undefined) await kubeswiftBoots(name)
    else if (g.status.phase === 'Running' && !kubelets.has(name) && (await work.get(nodeRef(name))) === undefined) {
      await kubeletJoins(name)
      await hamiRegisters(name)
    }
  }
  for (const name of [...kubelets.keys()])
    if (name.startsWith(`${pool}-`) && !mine.some((g: Obj) => g.metadata.name === name)) kubeletStops(name)
}

async function podPhase(name: string, status: JsonObject): Promise<void> {
  await wl.request('PATCH', `/api/v1/namespaces/work/pods/${name}/status`, { status }, 'application/merge-patch+json')
}

t.test(
  'an autoscaling pool: a pending GPU Pod scales it to 2; without demand the idle cell drains, its guest goes and its Node is swept',
  async (t) => {
    const name = 'auto'
    const autoscaling = {
      autoscaling: {
        enabled: true,
        minReplicas: 1,
        maxReplicas: 2,
        stabilizationWindow: '0s',
        scaleDown: 'Auto',
        scaleDownStabilizationWindow: '0s'
      }
    }
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(name, 1, autoscaling)) })
    const world = (): Promise<void> => playCells(name)
    const one = await until(name, 'one Ready cell', (p) => p.status?.readyCells === 1 && cellOf(p, 'auto-0')?.phase === 'Ready', { world })
    t.same(one.status.cellDeviceShape, { memoryMiB: 81920, cores: 100 }, 'the shape of the device HAMi registered')
    t.equal(condition(one, 'ScalingActive')?.reason, 'AtMinReplicas')

    // auto-0 serves a GPU Pod (HAMi has allocated it a share): it is not idle.
    await wl.create(podsRef, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'trainer',
        namespace: 'work',
        annotations: {
          'hami.io/vgpu-node': 'auto-0',
          'hami.io/vgpu-devices-allocated': 'GPU-0,NVIDIA,20000,50:;',
          'hami.io/vgpu-devices-to-allocate': ';'
        }
      },
      spec: {
        nodeName: 'auto-0',
        containers: [{ name: 'main', image: 'busybox', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '20000' } } }],
        tolerations: [{ key: 'gpu', operator: 'Exists' }]
      }
    })
    await podPhase('trainer', { phase: 'Running' })
    // A GPU Pod the scheduler could not place, which fits the pool's Nodes (their label, their taint).
    await wl.create(podsRef, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'wants-gpu', namespace: 'work' },
      spec: {
        nodeSelector: { 'gpu.pool': name },
        tolerations: [{ key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8192', 'nvidia.com/gpucores': '30' } }
          }
        ]
      }
    })
    await podPhase('wants-gpu', {
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/1 nodes are available: 1 Insufficient nvidia.com/gpu.'
        }
      ]
    })

    const up = await until(name, 'a scale-up', (p) => p.status?.desiredReplicas === 2, { world })
    t.match(condition(up, 'ScalingActive')?.reason, /^(ScaledUp|AtMaxReplicas)$/)
    t.type(up.status.lastScaleUpTime, 'string')
    t.match(up.status.demand, { pendingPods: 1, satisfiable: 1 }, 'the demand the agent read')
    const cns = await infra.must(cnsRef(name))
    t.same(cns.status.demand, { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 1 }] })
    t.match(rowOf(cns, 'auto-0').allocations, { read: true, pods: 1, inFlight: false }, "the agent counts auto-0's allocation")

    const two = await until(name, 'two Ready cells', (p) => p.status?.readyCells === 2, { world })
    t.same(phases(two), ['auto-0:Ready', 'auto-1:Ready'])
    t.same(two.spec.replicas, 1, 'spec.replicas is never written')
    const guest1 = (await guests()).find((g: Obj) => g.metadata.name === 'auto-1')
    t.equal((await work.must(nodeRef('auto-1'))).metadata.labels[INSTANCE_LABEL], guest1.metadata.uid)

    // The demand is gone (the Pod was deleted): auto-1, idle, drains; auto-0 holds an allocation.
    await wl.delete({ ...podsRef, name: 'wants-gpu' })
    const down = await until(name, 'a scale-down', (p) => p.status?.drainingCells === 1, { world })
    t.same(phases(down), ['auto-0:Ready', 'auto-1:Draining'], 'the idle cell drains, not the one with an allocation')
    t.equal(down.status.desiredReplicas, 1)
    t.same(
      (await infra.must(cnsRef(name))).spec.nodes.map((n: Obj) => [n.name, n.cordon]),
      [
        ['auto-0', false],
        ['auto-1', true]
      ]
    )
    const cordoned = await eventually(
      'the agent to cordon auto-1',
      async () => {
        const node = await work.must(nodeRef('auto-1'))
        return node.spec.unschedulable === true ? node : undefined
      },
      60_000
    )
    t.equal(JSON.parse(cordoned.metadata.annotations['cells.kubeswift.io/managed']).cordoned, true, "recorded as the agent's cordon")
    t.not((await work.must(nodeRef('auto-0'))).spec.unschedulable, true, 'auto-0 stays schedulable')

    const gone = await until(name, 'the drained cell removed', (p) => (p.status?.cells ?? []).length === 1, { world, seconds: 180 })
    t.same(phases(gone), ['auto-0:Ready'])
    t.same(
      (await guests()).filter((g: Obj) => g.metadata.labels?.['cells.kubeswift.io/pool'] === name).map((g: Obj) => g.metadata.name),
      ['auto-0']
    )
    t.ok((await work.get({ ...podsRef, name: 'trainer' })) !== undefined, 'the GPU Pod on auto-0 is never touched')

    // The VM is gone, its kubelet stopped renewing: the agent sweeps the Node once it is not live.
    const swept = await eventually(
      "auto-1's Node swept",
      async () => {
        await sync(name)
        await world()
        const c = await infra.must(cnsRef(name))
        const record = (c.status?.swept ?? []).find((s: Obj) => s.name === 'auto-1')
        return record !== undefined && (await work.get(nodeRef('auto-1'))) === undefined ? { c, record } : undefined
      },
      120_000
    )
    t.match(swept.record, { name: 'auto-1', instance: guest1.metadata.uid, reason: 'Orphan' })
    t.same(
      swept.c.spec.nodes.map((n: Obj) => n.name),
      ['auto-0']
    )
    t.ok(await work.get(nodeRef('auto-0')), 'the live Node stays')
    const settled = await until(
      name,
      'the pool settled at one',
      (p) => p.status?.replicas === 1 && condition(p, 'Ready')?.status === 'True',
      { world }
    )
    t.same([settled.status.readyCells, settled.status.desiredReplicas], [1, 1])
  }
)
