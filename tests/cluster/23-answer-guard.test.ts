/**
 * A tenant's last-applied records against a real API server (metacontroller.md rules 5 and 10).
 *
 * A tenant may annotate its own children, and Metacontroller creates whatever a hook answers, of
 * any kind, in any namespace. The driver here does the same (driver-children.ts finds the REST
 * path of any answered kind by discovery and writes in the namespace the object names); the first
 * test shows it, with the answer the hooks gave before this guard (a kept child answered as its
 * record), so that the scenarios after it prove something. Then the attack, three ways: a running
 * Instance's Pod, a cell's bootstrap Secret, and the isolation policy under an unparseable
 * Setting, each annotated with the record of a ClusterRoleBinding of cluster-admin to the
 * tenant's ServiceAccount (carrying the child's own labels, so it matches the parent's selector),
 * the parent touched, the driver syncing: no ClusterRoleBinding, and the child undisturbed.
 */
import t from 'tap'
import { Driver } from './support/driver.ts'
import { fetchTransport, type HookTransport } from './support/driver-protocol.ts'
import { KUBESWIFT_CRDS } from './support/env.ts'
import { storeUnchecked } from './support/settings.ts'
import { startScenario } from './support/scenario.ts'
import { bootGuests, PlayedWorkload, poolManifest, preparePoolNamespace } from './support/cellpool.ts'
import { isReason, type ResourceRef } from './support/kube.ts'
import { reader, refs } from './support/reads.ts'
import { isObject, LAST_APPLIED_ANNOTATION, type JsonObject } from '../support/merge.ts'
import { POD_STATUS } from '../unit/fixtures/instance.ts'

const env = await startScenario({ extraCrds: [KUBESWIFT_CRDS] })
const { kube, cluster } = env

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { get, must } = reader<Obj>(kube)

const TENANT = 'tenant'
const CELLS = 'cells'
const POOL = 'gpus'
const POD_CIDRS = 'instance-isolation-pod-cidrs'
const SETTING: ResourceRef = { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', name: POD_CIDRS }
const bindingRef = (name: string): ResourceRef => ({ apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'clusterrolebindings', name })
const secretRef = (namespace: string, name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'secrets', namespace, name })
const poolRef: ResourceRef = { apiVersion: 'cells.kubeswift.io/v1alpha1', resource: 'gpucellpools', namespace: CELLS, name: POOL }
const WORKSPACE = { image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'] }

/** The record a tenant writes: a ClusterRoleBinding of cluster-admin to its ServiceAccount, with `labels`. */
function bindingRecord(name: string, namespace: string, labels: unknown): JsonObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: labels as JsonObject },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace }]
  }
}

/** The tenant's write: the record in the child's last-applied annotation (a metadata-only patch). */
async function writeRecord(ref: ResourceRef, record: JsonObject): Promise<void> {
  await kube.patch(ref, { metadata: { annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(record) } } }, 'merge')
}

/** Touching a parent: a metadata change, which makes Metacontroller sync it. */
async function touch(ref: ResourceRef): Promise<void> {
  await kube.patch(ref, { metadata: { annotations: { 'example.com/touched': String(Date.now()) } } }, 'merge')
}

/** Every ClusterRoleBinding that binds something to a ServiceAccount of `namespace`. */
async function bindingsTo(namespace: string): Promise<string[]> {
  const all = (await kube.list({ apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'clusterrolebindings' })).body as Obj[]
  return all.filter((b) => (b.subjects ?? []).some((s: Obj) => s.namespace === namespace)).map((b) => String(b.metadata.name))
}

/** The kubelet's part for a running Pod (the unit fixtures' running status). */
async function runPod(namespace: string, name: string): Promise<void> {
  const pod = await must(refs.pod(namespace, name))
  pod.status = structuredClone(POD_STATUS.running)
  await kube.updateStatus(refs.pod(namespace, name), pod)
}

async function runningInstance(name: string): Promise<Obj> {
  await kube.create(refs.instance(TENANT, name), {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace: TENANT },
    spec: { type: 'hami', ...WORKSPACE, ports: [{ port: 8888 }], resources: { accelerator: { count: 1 } } }
  })
  await env.driver('gpuhooks-instance').settle({ namespace: TENANT, name }, { maxPasses: 3 })
  await runPod(TENANT, name)
  await env.driver('gpuhooks-instance').settle({ namespace: TENANT, name }, { maxPasses: 3 })
  return must(refs.pod(TENANT, name))
}

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', TENANT])
  await cluster.kubectl(['wait', '--for=create', '-n', TENANT, 'serviceaccount/default', '--timeout=60s'])
  await kube.create(
    { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instancetypes', name: 'hami' },
    {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'InstanceType',
      metadata: { name: 'hami' },
      spec: { devicePlugin: 'HAMi', families: ['Whole'], maxCount: 1, defaults: { cpu: '1', memory: '1Gi' } }
    }
  )
})

t.test('the driver creates what a hook answers: answered as its record, a Pod becomes a ClusterRoleBinding', async (t) => {
  const pod = await runningInstance('control')
  await writeRecord(refs.pod(TENANT, 'control'), bindingRecord('control-admin', TENANT, pod.metadata.labels))
  // The hooks' answer as it was before the guard: the kept Pod answered as its last-applied record.
  const asRecorded: HookTransport = async (url, body, timeoutMs) => {
    const res = await fetchTransport(url, body, timeoutMs)
    if (body.children === undefined) return res // customize
    const answer = JSON.parse(res.body) as { children: Obj[] }
    const observed = ((body.children as Obj)['Pod.v1'] ?? {}) as Record<string, Obj>
    answer.children = answer.children.map((c) => {
      const text =
        c.kind === 'Pod' ? observed[`${TENANT}/${String(c.metadata.name)}`]?.metadata?.annotations?.[LAST_APPLIED_ANNOTATION] : undefined
      return typeof text === 'string' ? JSON.parse(text) : c
    })
    return { status: res.status, body: JSON.stringify(answer) }
  }
  const before = env.driver('gpuhooks-instance').options
  const control = new Driver({ ...before, transport: asRecorded })
  const report = await control.syncOnce({ namespace: TENANT, name: 'control' })
  // The API server took the create (the garbage collector may delete the binding soon after: its
  // owner reference names a namespaced Instance, which a cluster-scoped object cannot have). The
  // report keys it by the parent's namespace, which the driver gives every answered object
  // without one, as Metacontroller's applyNamespaceDefaults does; a cluster-scoped kind ignores it.
  t.same(
    report.writes.filter((w) => w.verb === 'create' || w.verb === 'delete').map((w) => `${w.verb} ${w.target}`),
    [`delete Pod.v1 ${TENANT}/control`, `create ClusterRoleBinding.rbac.authorization.k8s.io/v1 ${TENANT}/control-admin`],
    'the binding was created, cluster-wide, and the Pod, no longer answered, deleted'
  )
  await kube.delete(bindingRef('control-admin')).catch((err: unknown) => {
    if (!isReason(err, 'NotFound')) throw err
  })
  await kube.delete(refs.instance(TENANT, 'control'))
  await env.driver('gpuhooks-instance').settle({ namespace: TENANT, name: 'control' }, { maxPasses: 4 })
})

t.test("a running Instance's Pod recording a ClusterRoleBinding: no binding, the Pod undisturbed", async (t) => {
  const instances = env.driver('gpuhooks-instance')
  const pod = await runningInstance('victim')
  await writeRecord(refs.pod(TENANT, 'victim'), bindingRecord('tenant-admin', TENANT, pod.metadata.labels))
  await touch(refs.instance(TENANT, 'victim'))
  const first = await instances.syncOnce({ namespace: TENANT, name: 'victim' })
  const { passes } = await instances.settle({ namespace: TENANT, name: 'victim' }, { maxPasses: 3 })
  passes.unshift(first)
  const answered = (first.response as Obj).children.map((c: Obj) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`)
  t.same(answered, [`Pod ${TENANT}/victim`, `Service ${TENANT}/victim`], 'the answer holds the Pod as itself, and the Service')
  t.same(
    passes.flatMap((p) => p.writes.filter((w) => w.target.startsWith('ClusterRoleBinding'))),
    [],
    'none was written'
  )
  t.equal(await get(bindingRef('tenant-admin')), undefined, 'no ClusterRoleBinding tenant-admin')
  t.same(await bindingsTo(TENANT), [], "nothing is bound to the tenant's ServiceAccounts")
  const after = await must(refs.pod(TENANT, 'victim'))
  t.equal(after.metadata.uid, pod.metadata.uid, 'the same Pod')
  t.equal(after.metadata.deletionTimestamp, undefined, 'not being deleted')
  t.same(after.spec.containers, pod.spec.containers, 'unchanged')
  t.same(
    passes.flatMap((p) => p.writes.filter((w) => w.target.startsWith('Pod'))),
    [],
    'no write to the Pod (OnDelete)'
  )
})

t.test("a cell's bootstrap Secret recording a ClusterRoleBinding: no binding, the Secret undisturbed", async (t) => {
  const pools = env.driver('gpuhooks-cellpool')
  await preparePoolNamespace(cluster, CELLS)
  await kube.create(poolRef, poolManifest(POOL, CELLS, { replicas: 1 }))
  const name = `${POOL}-0-bootstrap`
  // Cells are made once the workload cluster is observed: the agent's part, played, between syncs.
  const workload = new PlayedWorkload(kube, CELLS)
  for (let round = 0; round < 5 && (await get(secretRef(CELLS, name))) === undefined; round++) {
    await pools.settle({ namespace: CELLS, name: POOL }, { maxPasses: 6 })
    await bootGuests(kube, CELLS)
    await workload.agentPass(POOL)
  }
  const secret = await must(secretRef(CELLS, name))
  await writeRecord(secretRef(CELLS, name), bindingRecord('cell-admin', CELLS, secret.metadata.labels))
  await touch(poolRef)
  const { passes } = await pools.settle({ namespace: CELLS, name: POOL }, { maxPasses: 3 })
  const answered = (passes[0]?.response as Obj).children.map((c: Obj) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`)
  t.ok(answered.includes(`Secret ${CELLS}/${name}`), 'the Secret is answered as itself')
  t.notOk(
    answered.some((a: string) => a.startsWith('ClusterRoleBinding')),
    'and no ClusterRoleBinding'
  )
  t.same(
    passes.flatMap((p) => p.writes.filter((w) => w.target.startsWith('ClusterRoleBinding'))),
    [],
    'none was written'
  )
  t.equal(await get(bindingRef('cell-admin')), undefined, 'no ClusterRoleBinding cell-admin')
  t.same(await bindingsTo(CELLS), [])
  const after = await must(secretRef(CELLS, name))
  t.equal(after.metadata.uid, secret.metadata.uid, 'the same Secret')
  t.same(after.data, secret.data, 'with the same bootstrap data')
})

t.test(
  'the isolation policy recording a ClusterRoleBinding while the Setting is unparseable: no binding, the policy undisturbed',
  async (t) => {
    const isolation = env.driver('gpuhooks-instance-isolation')
    await kube.create(SETTING, {
      apiVersion: 'gpustack.ai/v1alpha1',
      kind: 'Setting',
      metadata: { name: POD_CIDRS },
      value: '10.244.0.0/16'
    })
    await isolation.settle({ name: TENANT }, { maxPasses: 3 })
    const policy = await must(refs.policy(TENANT, 'gpustack-instance-isolation'))
    await writeRecord(refs.policy(TENANT, 'gpustack-instance-isolation'), bindingRecord('isolation-admin', TENANT, policy.metadata.labels))

    // The CRD's CEL rule refuses an unparseable value: it is stored as an older release allowed.
    await storeUnchecked(cluster, kube, SETTING, 'not-a-cidr')

    const { passes } = await isolation.settle({ name: TENANT }, { maxPasses: 3 })
    const response = passes[0]?.response as Obj
    t.same(
      response.attachments.map((c: Obj) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`),
      [`NetworkPolicy ${TENANT}/gpustack-instance-isolation`],
      'the policy is answered as itself'
    )
    t.match(response.annotations['gpustack.ai/instance-isolation'], /^error: /, 'the Setting is reported unparseable')
    t.same(
      passes.flatMap((p) => p.writes.filter((w) => w.target.startsWith('ClusterRoleBinding'))),
      [],
      'none was written'
    )
    t.equal(await get(bindingRef('isolation-admin')), undefined, 'no ClusterRoleBinding isolation-admin')
    t.same(await bindingsTo(TENANT), [])
    const after = await must(refs.policy(TENANT, 'gpustack-instance-isolation'))
    t.equal(after.metadata.uid, policy.metadata.uid, 'the same policy')
    t.same(after.spec, policy.spec, 'with the same rules')
    t.ok(isObject(after.metadata.annotations), 'annotated as before')
  }
)
