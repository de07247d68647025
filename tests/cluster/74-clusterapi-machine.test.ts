// Cluster API's real core controllers (sigs.k8s.io/cluster-api, built by build-clusterapi.sh)
// against the test cluster as the management cluster and a second API server as the workload
// cluster, with stand-ins only for the providers not built here (support/clusterapi-providers.ts).
// It proves the facts a Cluster API cell is built on, each as Cluster API itself shows it:
// - a Machine whose controller owner is the pool (as Metacontroller makes its children), and
//   whose KubeSwiftMachine and bootstrap config the pool owns without the controller flag, is
//   provisioned and gets `status.nodeRef` from Cluster API, through either bootstrap route;
// - a foreign controller owner on the KubeSwiftMachine stops it for good, and then holds the
//   Machine's deletion until the KubeSwiftMachine is deleted by hand;
// - the pre-drain hook annotation holds a deletion before any cordon or eviction once the
//   Machine has a nodeRef, and is passed over without one, where a pre-terminate hook still
//   holds the deletion before the KubeSwiftMachine (the VM) is deleted;
// - a Machine whose Node was deleted first keeps its nodeRef, still waits for the hook, and then
//   skips the drain: nothing is evicted.
// Everything is polled for; nothing depends on how long Cluster API takes.
import { join } from 'node:path'
import t from 'tap'
import { nodeRef, runAllocatedPod, WORK_NAMESPACE } from './support/agent.ts'
import { CELLS, poolManifest } from './support/cellpool.ts'
import { capiRefs, CLUSTER_API } from './support/clusterapi.ts'
import { contractRef, KINDS, NO_KUBELET_ANNOTATION, standInRef } from './support/clusterapi-providers.ts'
import { startClusterApiWorld } from './support/clusterapi-world.ts'
import type { ResourceRef } from './support/kube.ts'
import { condition, reader, refs } from './support/reads.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'capi'
const CLUSTER = 'wl'
const POOL = 'cells'
const HOOK = 'pre-drain.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
const TERMINATE_HOOK = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
const ROOT = join(import.meta.dirname, '..', '..')

const { kube, wl, workload, providers, capiCluster, until, managerLogged } = await startClusterApiWorld({
  namespace: NS,
  clusterName: CLUSTER,
  extraCrds: [join(ROOT, 'crds', 'gpucellpools.cells.kubeswift.io.yaml')]
})
await wl.create(refs.namespace(WORK_NAMESPACE), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORK_NAMESPACE } })
const infra = reader<Loose>(kube)
const work = reader<Loose>(wl)

// The pool, parent of the cells: Metacontroller would make it the controller owner of its children.
const pool: Loose = (await kube.create({ apiVersion: CELLS, resource: 'gpucellpools', namespace: NS }, poolManifest(POOL, NS))).body
const poolOwner = (controller: boolean): Loose => ({
  apiVersion: CELLS,
  kind: 'GPUCellPool',
  name: POOL,
  uid: pool.metadata.uid,
  ...(controller ? { controller: true, blockOwnerDeletion: true } : {})
})
const clusterLabel = { 'cluster.x-k8s.io/cluster-name': CLUSTER }
/** The registration labels the bootstrap data of these cells gives the kubelet. */
const JOIN = '#cloud-config\nruncmd:\n  - kubeadm join --node-labels=gpu=on,cells.kubeswift.io/pool=cells\n'

// The bootstrap config template a pool's clusterAPI.bootstrapConfigTemplateRef names.
await kube.create(standInRef(KINDS.bootstrapTemplate, NS), {
  apiVersion: `${KINDS.bootstrapTemplate.group}/${KINDS.bootstrapTemplate.version}`,
  kind: KINDS.bootstrapTemplate.kind,
  metadata: { name: 'cells-join', namespace: NS },
  spec: { template: { spec: { userData: JOIN } } }
})

interface CellOptions {
  /** `config`: a KubeadmConfig copied from the template; `secret`: `bootstrap.dataSecretName` of a Secret the pool renders. */
  bootstrap: 'config' | 'secret'
  /** The KubeSwiftMachine's owner reference to the pool carries the controller flag. */
  infraControlledByPool?: boolean
  infraAnnotations?: Record<string, string>
  machineAnnotations?: Record<string, string>
}

/** What a pool would make for cell `name`: its bootstrap config or Secret, its KubeSwiftMachine, its Machine (last). */
async function createCell(name: string, options: CellOptions): Promise<void> {
  const labels = { ...clusterLabel, 'cells.kubeswift.io/pool': POOL, 'cells.kubeswift.io/cell': name }
  if (options.bootstrap === 'config') {
    const template: Loose = (await kube.get(standInRef(KINDS.bootstrapTemplate, NS, 'cells-join'))).body
    await kube.create(standInRef(KINDS.bootstrapConfig, NS), {
      apiVersion: `${KINDS.bootstrapConfig.group}/${KINDS.bootstrapConfig.version}`,
      kind: KINDS.bootstrapConfig.kind,
      metadata: { name, namespace: NS, labels, ownerReferences: [poolOwner(false)] },
      spec: structuredClone(template.spec.template.spec)
    })
  } else {
    const data = Buffer.from(JOIN).toString('base64')
    await kube.create(secretRef(NS), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${name}-bootstrap`, namespace: NS, labels, ownerReferences: [poolOwner(true)] },
      data: { 'user-data': data, value: data }
    })
  }
  await kube.create(standInRef(KINDS.machine, NS), {
    apiVersion: `${KINDS.machine.group}/${KINDS.machine.version}`,
    kind: KINDS.machine.kind,
    metadata: {
      name,
      namespace: NS,
      labels,
      annotations: options.infraAnnotations ?? {},
      ownerReferences: [poolOwner(options.infraControlledByPool === true)]
    },
    spec: { backend: { type: 'SwiftGuest', swiftGuest: { imageRef: { name: 'ubuntu' }, guestClassRef: { name: 'gpu' } } } }
  })
  await kube.create(capiRefs.machine(NS), {
    apiVersion: CLUSTER_API,
    kind: 'Machine',
    metadata: { name, namespace: NS, labels, annotations: options.machineAnnotations ?? {}, ownerReferences: [poolOwner(true)] },
    spec: {
      clusterName: CLUSTER,
      bootstrap:
        options.bootstrap === 'config' ? { configRef: contractRef(KINDS.bootstrapConfig, name) } : { dataSecretName: `${name}-bootstrap` },
      infrastructureRef: contractRef(KINDS.machine, name)
    }
  })
}

const secretRef = (namespace: string, name?: string): ResourceRef => ({ apiVersion: 'v1', resource: 'secrets', namespace, name })
const machine = (name: string): Promise<Loose> => infra.get(capiRefs.machine(NS, name))
const owners = (obj: Loose): Loose[] =>
  (obj.metadata.ownerReferences ?? []).map((r: Loose) => ({ kind: r.kind, name: r.name, controller: r.controller === true }))
/** Polls until Cluster API has set the Machine's nodeRef and its phase is Running. */
const running = (name: string): Promise<Loose> =>
  until(`Machine ${name} Running with a nodeRef`, async () => {
    const m = await machine(name)
    return m?.status?.nodeRef?.name === name && m.status.phase === 'Running' ? m : undefined
  })
/** Polls until the Machine's Deleting condition has `reason`. */
/**
 * The Machine once its Deleting condition has `reason` and, when `started` names one, its
 * `status.deletion` records that wait's start time. Cluster API's patch helper writes a Machine's
 * conditions, then its metadata and spec, then the rest of its status, in three requests
 * (util/patch/patch.go), so a read can see the condition before the time it records beside it.
 */
const deletingWith = (name: string, reason: string, started?: string): Promise<Loose> =>
  until(`Machine ${name} Deleting with reason ${reason}${started !== undefined ? ` and status.deletion.${started}` : ''}`, async () => {
    const m = await machine(name)
    if (condition(m, 'Deleting')?.reason !== reason) return undefined
    return started === undefined || typeof m?.status?.deletion?.[started] === 'string' ? m : undefined
  })
const gone = (what: string, read: () => Promise<Loose>): Promise<true> =>
  until(`${what} to be gone`, async () => ((await read()) === undefined ? true : undefined))
t.test('the Cluster: its infrastructure provisioned and control plane initialized from the stand-ins', async (t) => {
  t.same(
    capiCluster.spec.controlPlaneEndpoint,
    { host: '127.0.0.1', port: Number(new URL(workload.server).port) },
    'the endpoint came from the control plane'
  )
  t.same(owners(await infra.must(standInRef(KINDS.controlPlane, NS, CLUSTER))), [{ kind: 'Cluster', name: CLUSTER, controller: false }])
})

t.test(
  'a Machine controlled by the pool, its KubeSwiftMachine and bootstrap config co-owned, is provisioned and gets its nodeRef',
  async (t) => {
    await createCell('cells-0', { bootstrap: 'config' })
    const m = await running('cells-0')
    t.equal(m.spec.providerID, 'kubeswift://capi/cells-0', 'the providerID came from the KubeSwiftMachine')
    t.equal(m.spec.bootstrap.dataSecretName, 'cells-0', 'Cluster API wrote the data Secret name into the Machine spec')
    t.same(
      owners(m),
      [{ kind: 'GPUCellPool', name: POOL, controller: true }],
      'the pool stays the only owner: Cluster API adds no Cluster owner to a controlled Machine'
    )
    t.equal(m.metadata.labels['cluster.x-k8s.io/cluster-name'], CLUSTER)
    t.ok(m.metadata.finalizers.includes('machine.cluster.x-k8s.io'), 'Cluster API put its finalizer on the Machine')
    const coOwned = [
      { kind: 'GPUCellPool', name: POOL, controller: false },
      { kind: 'Machine', name: 'cells-0', controller: true }
    ]
    t.same(
      owners(await infra.must(standInRef(KINDS.machine, NS, 'cells-0'))),
      coOwned,
      'the Machine became the KubeSwiftMachine controller'
    )
    t.same(owners(await infra.must(standInRef(KINDS.bootstrapConfig, NS, 'cells-0'))), coOwned, 'and the bootstrap config controller')
    const node = await work.must(nodeRef('cells-0'))
    t.equal(node.spec.providerID, 'kubeswift://capi/cells-0')
    t.match(
      node.metadata.labels,
      { gpu: 'on', 'cells.kubeswift.io/pool': POOL },
      'the kubelet registered with the labels of the copied template'
    )
  }
)

t.test('bootstrap.dataSecretName: a Secret the pool renders and controls is used as it is', async (t) => {
  await createCell('cells-1', { bootstrap: 'secret' })
  const m = await running('cells-1')
  t.match(condition(m, 'BootstrapConfigReady'), { status: 'True', reason: 'DataSecretProvided' })
  t.equal(m.status.initialization.bootstrapDataSecretCreated, undefined, 'no bootstrap status is recorded for a given Secret')
  t.same(
    owners(await infra.must(secretRef(NS, 'cells-1-bootstrap'))),
    [{ kind: 'GPUCellPool', name: POOL, controller: true }],
    'Cluster API does not claim the Secret'
  )
})

t.test('a KubeSwiftMachine whose controller owner is the pool is never provisioned, and holds its Machine deletion', async (t) => {
  await createCell('cells-9', { bootstrap: 'config', infraControlledByPool: true })
  const line = await managerLogged('err="Object capi/cells-9 is already owned by another GPUCellPool controller cells"')
  t.comment(`Cluster API logs: ${line.slice(line.indexOf('err='))}`)
  const ksm = await infra.must(standInRef(KINDS.machine, NS, 'cells-9'))
  t.same(owners(ksm), [{ kind: 'GPUCellPool', name: POOL, controller: true }], 'no Machine owner was added, so no provider acts on it')
  t.equal(ksm.spec.providerID, undefined)
  const m = await machine('cells-9')
  t.equal(m.spec.providerID, undefined, 'the Machine never gets a providerID')
  t.equal(m.status?.nodeRef, undefined)
  t.same(
    owners(await infra.must(standInRef(KINDS.bootstrapConfig, NS, 'cells-9'))).find((o: Loose) => o.controller),
    { kind: 'Machine', name: 'cells-9', controller: true },
    'the refusal is per object: the co-owned bootstrap config was taken over'
  )
  // Nor does deleting the Machine delete what it could not own: its deletion waits on it.
  await kube.delete(capiRefs.machine(NS, 'cells-9'))
  await managerLogged('"Waiting for infrastructure to be deleted"', 'Machine="capi/cells-9"')
  const stuck = await deletingWith('cells-9', 'WaitingForInfrastructureDeletion')
  t.ok(stuck.metadata.finalizers.includes('machine.cluster.x-k8s.io'), 'the Machine stays, held by its finalizer')
  t.equal(
    (await infra.must(standInRef(KINDS.machine, NS, 'cells-9'))).metadata.deletionTimestamp,
    undefined,
    'the KubeSwiftMachine is not deleted'
  )
  await kube.delete(standInRef(KINDS.machine, NS, 'cells-9'))
  await gone('Machine cells-9', () => machine('cells-9'))
  t.pass('deleting the KubeSwiftMachine by hand lets the Machine go')
})

t.test('with a nodeRef, the pre-drain hook holds the deletion before any cordon or eviction', async (t) => {
  await runAllocatedPod(wl, 'gpu-job', 'cells-0', { 'nvidia.com/gpu': '1' })
  await kube.patch(capiRefs.machine(NS, 'cells-0'), { metadata: { annotations: { [HOOK]: 'gpuhooks' } } }, 'merge')
  await kube.delete(capiRefs.machine(NS, 'cells-0'))
  const held = await deletingWith('cells-0', 'WaitingForPreDrainHook', 'waitForPreDrainHookStartTime')
  t.match(
    condition(held, 'Deleting').message,
    /Waiting for pre-drain hooks to succeed \(hooks: pre-drain\.delete\.hook\.machine\.cluster\.x-k8s\.io\/gpuhooks-drain\)/
  )
  t.type(held.status.deletion.waitForPreDrainHookStartTime, 'string')
  t.equal(held.status.deletion.nodeDrainStartTime, undefined, 'no drain started')
  t.not((await work.must(nodeRef('cells-0'))).spec.unschedulable, true, 'the Node is not cordoned')
  t.equal((await work.must(refs.pod(WORK_NAMESPACE, 'gpu-job'))).metadata.deletionTimestamp, undefined, 'the Pod is not evicted')
  t.equal((await infra.must(standInRef(KINDS.machine, NS, 'cells-0'))).metadata.deletionTimestamp, undefined, 'the VM is not being deleted')

  // The hook's owner lets go: Cluster API cordons and evicts.
  await kube.patch(capiRefs.machine(NS, 'cells-0'), { metadata: { annotations: { [HOOK]: null } } }, 'merge')
  const evicted = await until('the Pod evicted', async () => {
    const pod = await work.must(refs.pod(WORK_NAMESPACE, 'gpu-job'))
    return pod.metadata.deletionTimestamp !== undefined ? pod : undefined
  })
  t.ok(evicted.metadata.deletionTimestamp, 'Cluster API evicted the GPU Pod once the hook was gone')
  t.equal((await work.must(nodeRef('cells-0'))).spec.unschedulable, true, 'and cordoned the Node')
  // The kubelet would confirm the Pod's end; no kubelet runs, so the test removes it.
  await wl.delete(refs.pod(WORK_NAMESPACE, 'gpu-job'), { gracePeriodSeconds: 0 })
  await gone('Machine cells-0', () => machine('cells-0'))
  t.equal(await infra.get(standInRef(KINDS.machine, NS, 'cells-0')), undefined, 'the KubeSwiftMachine went first')
  t.equal(await infra.get(standInRef(KINDS.bootstrapConfig, NS, 'cells-0')), undefined, 'then the bootstrap config')
  t.equal(await work.get(nodeRef('cells-0')), undefined, 'and Cluster API deleted the Node')
  t.notOk(providers.kubeletsRunning().includes('cells-0'), 'the VM stopped')
})

t.test('without a nodeRef the pre-drain hook is passed over; a pre-terminate hook still holds the VM', async (t) => {
  await createCell('cells-2', {
    bootstrap: 'config',
    infraAnnotations: { [NO_KUBELET_ANNOTATION]: 'true' },
    machineAnnotations: { [HOOK]: 'gpuhooks', [TERMINATE_HOOK]: 'gpuhooks' }
  })
  const provisioned = await until('Machine cells-2 Provisioned', async () => {
    const m = await machine('cells-2')
    return m?.status?.phase === 'Provisioned' ? m : undefined
  })
  t.equal(provisioned.status.nodeRef, undefined, 'no Node registered, so no nodeRef')
  await kube.delete(capiRefs.machine(NS, 'cells-2'))
  const held = await deletingWith('cells-2', 'WaitingForPreTerminateHook', 'waitForPreTerminateHookStartTime')
  t.equal(held.status.deletion.waitForPreDrainHookStartTime, undefined, 'the pre-drain hook was never waited for')
  t.type(held.status.deletion.waitForPreTerminateHookStartTime, 'string')
  t.equal((await infra.must(standInRef(KINDS.machine, NS, 'cells-2'))).metadata.deletionTimestamp, undefined, 'the VM is not being deleted')
  const line = await managerLogged(
    'Skipping deletion of Kubernetes Node associated with Machine as it is not allowed',
    'Machine="capi/cells-2"'
  )
  t.comment(`Cluster API logs: ${line.slice(line.indexOf('"Skipping'))}`)
  await kube.patch(capiRefs.machine(NS, 'cells-2'), { metadata: { annotations: { [TERMINATE_HOOK]: null } } }, 'merge')
  await gone('Machine cells-2', () => machine('cells-2'))
  t.pass('released, the Machine went with its pre-drain hook annotation still on it')
})

t.test('the Node deleted first: the Machine keeps its nodeRef, waits for the hook, then skips the drain', async (t) => {
  await runAllocatedPod(wl, 'cpu-job', 'cells-1', {})
  await kube.patch(capiRefs.machine(NS, 'cells-1'), { metadata: { annotations: { [HOOK]: 'gpuhooks' } } }, 'merge')
  await wl.delete(nodeRef('cells-1'))
  await until('Cluster API to see the Node gone', async () => {
    const m = await machine('cells-1')
    return condition(m, 'NodeHealthy')?.reason === 'NodeDeleted' ? m : undefined
  })
  await kube.delete(capiRefs.machine(NS, 'cells-1'))
  const held = await deletingWith('cells-1', 'WaitingForPreDrainHook')
  t.equal(held.status.nodeRef.name, 'cells-1', 'the nodeRef outlives the Node, so the hook still holds')
  await kube.patch(capiRefs.machine(NS, 'cells-1'), { metadata: { annotations: { [HOOK]: null } } }, 'merge')
  await gone('Machine cells-1', () => machine('cells-1'))
  t.equal((await work.must(refs.pod(WORK_NAMESPACE, 'cpu-job'))).metadata.deletionTimestamp, undefined, 'nothing was evicted')
  await managerLogged('Could not find Node from Machine.status.nodeRef, skipping Node drain', 'Machine="capi/cells-1"')
})
