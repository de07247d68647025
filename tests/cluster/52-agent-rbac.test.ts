// The workload agent under exactly the infrastructure-cluster RBAC it ships with
// (deploy/agent-rbac/infrastructure-cluster.yaml, which the chart's agent RBAC matches, see
// tests/unit/chart.test.ts): the agent runs as a real process with a token of its ServiceAccount,
// leads through its Lease, serves a CellNodeSet (finalizer and status) and releases the Lease on
// SIGTERM, with no request refused, while its workload-cluster access is exactly
// deploy/agent-rbac/workload-cluster.yaml; and what the Role leaves out is refused by the API
// server's own authorizer (another Lease by name, patch, delete).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { POOL, poolSpec } from '../unit/fixtures/cellpool.ts'
import { grantAgentAccess, startAgent } from './support/agent.ts'
import { startCluster } from './support/cluster.ts'
import { eventually, installCrds } from './support/env.ts'
import { isReason, KubeClient, loadKubeconfig, type ResourceRef } from './support/kube.ts'
import { binariesDir, startWorkloadCluster, tokenKubeconfig } from './support/workload-cluster.ts'
import { condition } from './support/reads.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const ROOT = join(import.meta.dirname, '..', '..')
const AGENT_NS = 'gpuhooks'
const SA = 'gpuhooks-workload-agent'
const AS = `system:serviceaccount:${AGENT_NS}:${SA}`
const NS = 'tenant'
const GROUP = 'cells.kubeswift.io/v1alpha1'

const binDir = binariesDir()
const cluster = await startCluster({ binDir })
const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
t.teardown(async () => {
  kube.close()
  await cluster.stop()
})

await installCrds(cluster, [
  join(ROOT, 'crds', 'cellnodesets.cells.kubeswift.io.yaml'),
  join(ROOT, 'crds', 'cellinfrastructures.cells.kubeswift.io.yaml'),
  join(ROOT, 'crds', 'gpucellpools.cells.kubeswift.io.yaml')
])
await cluster.kubectl(['create', 'namespace', AGENT_NS])
await cluster.kubectl(['create', 'namespace', NS])
await cluster.kubectl(['apply', '-f', join(ROOT, 'deploy', 'agent-rbac', 'infrastructure-cluster.yaml')])

// The workload cluster, with deploy/agent-rbac/workload-cluster.yaml bound to the agent's token user.
const workload = await startWorkloadCluster(cluster, binDir)
t.teardown(async () => {
  await workload.stop()
  workload.close()
})
await grantAgentAccess(workload.admin)

// The pool and its CellNodeSet as the cellpool hook would have them.
const pool = (
  await kube.create(
    { apiVersion: GROUP, resource: 'gpucellpools', namespace: NS },
    { apiVersion: GROUP, kind: 'GPUCellPool', metadata: { name: POOL, namespace: NS }, spec: poolSpec() as Loose }
  )
).body as Loose
const workloadKubeconfig = workload.agentKubeconfig()
await kube.create(
  { apiVersion: 'v1', resource: 'secrets', namespace: NS },
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'kc', namespace: NS, labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
    data: { value: Buffer.from(workloadKubeconfig).toString('base64') }
  }
)
const cnsRef: ResourceRef = { apiVersion: GROUP, resource: 'cellnodesets', namespace: NS, name: POOL }
await kube.create(cnsRef, {
  apiVersion: GROUP,
  kind: 'CellNodeSet',
  metadata: {
    name: POOL,
    namespace: NS,
    labels: { 'cells.kubeswift.io/pool': POOL, 'cells.kubeswift.io/pool-uid': pool.metadata.uid },
    ownerReferences: [
      { apiVersion: GROUP, kind: 'GPUCellPool', name: POOL, uid: pool.metadata.uid, controller: true, blockOwnerDeletion: true }
    ]
  },
  spec: {
    kubeconfigSecretRef: { name: 'kc', key: 'value' },
    poolUID: pool.metadata.uid,
    nodes: [],
    demand: { resources: ['nvidia.com/gpu'], nodeLabels: { gpu: 'on' }, taints: [] }
  }
})

// The agent's credentials: a token of its ServiceAccount, nothing else.
const token = (await cluster.kubectl(['create', 'token', SA, `--namespace=${AGENT_NS}`, '--duration=1h'])).stdout.trim()
const agentKubeconfig = join(cluster.dir, 'agent-sa.kubeconfig')
writeFileSync(agentKubeconfig, tokenKubeconfig(cluster.server, cluster.caCertPem, token))

const agent = await startAgent(agentKubeconfig, cluster.dir, {
  LEASE_NAMESPACE: undefined,
  POD_NAMESPACE: AGENT_NS,
  POD_NAME: 'agent-rbac',
  LEASE_NAME: undefined
})
t.teardown(() => {
  if (agent.child.exitCode === null) agent.child.kill('SIGKILL')
})

function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return eventually(what, check, timeoutMs, () => `agent log:\n${agent.logTail()}`)
}

const leaseRef: ResourceRef = { apiVersion: 'coordination.k8s.io/v1', resource: 'leases', namespace: AGENT_NS, name: SA }
async function lease(): Promise<Loose> {
  try {
    return (await kube.get(leaseRef)).body
  } catch (error) {
    if (isReason(error, 'NotFound')) return undefined
    throw error
  }
}

t.test('as its ServiceAccount the agent leads, syncs its informers and serves the CellNodeSet in both clusters', async (t) => {
  await until('/readyz 200', async () => {
    try {
      return (await fetch(`http://127.0.0.1:${agent.port}/readyz`)).status === 200 ? true : undefined
    } catch {
      return undefined
    }
  })
  const held = await until('the Lease held', async () => ((await lease())?.spec?.holderIdentity === 'agent-rbac' ? true : undefined))
  t.ok(held, 'the Lease is created and held by the agent')
  const renewed = (await lease()).spec.renewTime
  await until('the Lease renewed', async () => ((await lease()).spec.renewTime !== renewed ? true : undefined))
  t.pass('the Lease is renewed (update by name)')
  const c = await until('the status written', async () => {
    const c: Loose = (await kube.get(cnsRef)).body
    return condition(c, 'Reachable')?.status === 'True' ? c : undefined
  })
  t.ok(c.metadata.finalizers.includes('cells.kubeswift.io/workload-nodes'), 'the finalizer is patched on')
  t.match(
    (c.status.conditions as Loose[]).find((x) => x.type === 'Reachable'),
    { status: 'True' },
    'the workload cluster is reachable with its own RBAC'
  )
  t.same(c.status.demand, { read: true, pendingPods: 0, shapes: [] }, "the workload cluster's Pods are read")
})

t.test('under its RBAC the agent writes Events on the pool and counts one that happens again', async (t) => {
  const secretRef: ResourceRef = { apiVersion: 'v1', resource: 'secrets', namespace: NS, name: 'kc' }
  const optIn = (on: boolean) =>
    kube.patch(secretRef, { metadata: { labels: { 'cells.kubeswift.io/workload-kubeconfig': on ? 'true' : null } } }, 'merge')
  const story = async (): Promise<Loose[]> =>
    (await kube.list({ apiVersion: 'v1', resource: 'events', namespace: NS })).body.filter(
      (e: Loose) => e.involvedObject?.kind === 'GPUCellPool' && e.involvedObject.uid === pool.metadata.uid
    )
  const told = async (reason: string, count: number): Promise<Loose> =>
    until(`${reason} x${count}`, async () => (await story()).find((e) => e.reason === reason && Number(e.count) === count))

  // Without its opt-in label the Secret is refused (CredentialInvalid): the pool loses its workload cluster.
  await optIn(false)
  const lost = await told('WorkloadClusterUnreachable', 1)
  t.match(lost, { type: 'Warning', message: /\(CredentialInvalid\)/, source: { component: 'gpuhooks-workload-agent' } }, 'created')
  await optIn(true)
  t.ok(await told('WorkloadClusterReachable', 1), 'regained')
  // Lost again the same way within 10 minutes: the Warning already written is counted again (a patch).
  await optIn(false)
  const again = await told('WorkloadClusterUnreachable', 2)
  t.equal(again.metadata.name, lost.metadata.name, 'the same Event, x2')
  await optIn(true)
  await told('WorkloadClusterReachable', 2)
  const failed = readFileSync(agent.log, 'utf8')
    .split('\n')
    .filter((line) => line.includes('event not written'))
  t.same(failed, [], 'every Event was written')
})

t.test('SIGTERM: the Lease is released and nothing the agent asked for was refused', async (t) => {
  await agent.stop()
  t.equal(agent.child.exitCode, 0)
  t.equal((await lease()).spec.holderIdentity ?? '', '', 'released')
  const refused = readFileSync(agent.log, 'utf8')
    .split('\n')
    .filter((line) => /forbidden|\b403\b/i.test(line))
  t.same(refused, [], 'no request of the agent was refused')
})

t.test("what the agent's Role leaves out is refused by the API server", async (t) => {
  const canI = async (...args: string[]): Promise<string> =>
    (await cluster.kubectl(['auth', 'can-i', ...args, `--as=${AS}`, `--namespace=${AGENT_NS}`], { allowFail: true })).stdout.trim()
  t.equal(await canI('get', `leases/${SA}`), 'yes')
  t.equal(await canI('update', `leases/${SA}`), 'yes')
  t.equal(await canI('create', 'leases'), 'yes')
  t.equal(await canI('get', 'leases/kube-scheduler'), 'no', 'another Lease is not read')
  t.equal(await canI('update', 'leases/kube-scheduler'), 'no', 'another Lease is not taken')
  t.equal(await canI('patch', `leases/${SA}`), 'no')
  t.equal(await canI('delete', `leases/${SA}`), 'no')
  t.equal(await canI('list', 'leases'), 'no')
})
