// The workload agent's CellInfrastructure core and pass (docs/cellpool.md, "Cluster API cells"): the
// KubeSwiftMachine and bootstrap config of a Machine the pool controls, created once and owned by
// the Machine without the controller flag; a release takes the pool's deletion hooks off the
// Machine; nothing is written for a Machine the pool does not control. Every expectation is
// written out here.
import t from 'tap'
import {
  decideInfrastructure,
  refusedRefs,
  type InfrastructureInput,
  type InfrastructureSnapshot
} from '../../hooks/agent/infrastructure/decide.ts'
import { readInfrastructure, runInfrastructurePass } from '../../hooks/agent/infrastructure/pass.ts'
import type { ObjectsApi } from '../../hooks/agent/model/apis.ts'
import type { CellMachine } from '../../hooks/api/cellinfrastructure.ts'

const POOL_UID = 'uid-pool'
const PRE_DRAIN = 'pre-drain.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
const PRE_TERMINATE = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
const HOOKS = { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' }
const KSM_SPEC = { backend: { type: 'SwiftGuest', swiftGuest: { imageRef: { name: 'noble' }, guestClassRef: { name: 'gpu' } } } }

const poolRef = (uid = POOL_UID) => ({
  apiVersion: 'cells.kubeswift.io/v1alpha1',
  kind: 'GPUCellPool',
  name: 'cells',
  uid,
  controller: true,
  blockOwnerDeletion: true
})
function machine(more: { uid?: string; annotations?: Record<string, string>; deleting?: boolean; owner?: string } = {}): unknown {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name: 'cells-0',
      namespace: 'capi',
      uid: more.uid ?? 'uid-m0',
      resourceVersion: '41',
      annotations: more.annotations ?? HOOKS,
      ownerReferences: [poolRef(more.owner)],
      ...(more.deleting === true ? { deletionTimestamp: '2026-12-01T12:00:00Z' } : {})
    }
  }
}
const machineOwner = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Machine', name: 'cells-0', uid: 'uid-m0' }
const owned = (uid = 'uid-m0'): unknown => ({
  metadata: { name: 'cells-0', ownerReferences: [{ ...machineOwner, uid, controller: true }] }
})
const template = { spec: { template: { spec: { userData: '#cloud-config\n' } } } }

function entry(more: Partial<CellMachine> = {}): CellMachine {
  return {
    name: 'cells-0',
    kubeSwiftMachine: { labels: { 'cells.kubeswift.io/cell': 'cells-0' }, spec: KSM_SPEC },
    bootstrapConfig: {
      apiGroup: 'bootstrap.cluster.x-k8s.io',
      kind: 'KubeadmConfig',
      templateName: 'gpu-join',
      labels: { 'cluster.x-k8s.io/cluster-name': 'gpu' }
    },
    ...more
  }
}
const input = (machines: CellMachine[], status?: InfrastructureInput['status']): InfrastructureInput => ({
  metadata: { name: 'cells', namespace: 'capi', generation: 4 },
  spec: { poolUID: POOL_UID, machines },
  ...(status === undefined ? {} : { status })
})
function snapshot(more: Partial<Record<keyof InfrastructureSnapshot, Record<string, unknown>>> = {}): InfrastructureSnapshot {
  const map = (r: Record<string, unknown> | undefined): Map<string, unknown> => new Map(Object.entries(r ?? {}))
  return {
    machines: map(more.machines ?? { 'cells-0': machine() }),
    kubeSwiftMachines: map(more.kubeSwiftMachines),
    bootstrapConfigs: map(more.bootstrapConfigs),
    templates: map(more.templates ?? { 'bootstrap.cluster.x-k8s.io/KubeadmConfigTemplate/gpu-join': template })
  }
}

t.test('a new Machine gets its KubeSwiftMachine and its config from the template, owned by it without the controller flag', async (t) => {
  const d = decideInfrastructure(input([entry()]), snapshot())
  t.same(d.actions, [
    {
      type: 'create',
      machine: 'cells-0',
      object: {
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'KubeSwiftMachine',
        metadata: { name: 'cells-0', namespace: 'capi', labels: { 'cells.kubeswift.io/cell': 'cells-0' }, ownerReferences: [machineOwner] },
        spec: KSM_SPEC
      }
    },
    {
      type: 'create',
      machine: 'cells-0',
      object: {
        apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
        kind: 'KubeadmConfig',
        metadata: {
          name: 'cells-0',
          namespace: 'capi',
          labels: { 'cluster.x-k8s.io/cluster-name': 'gpu' },
          ownerReferences: [machineOwner]
        },
        spec: { userData: '#cloud-config\n' }
      }
    }
  ])
  t.same(d.status, { machines: [{ name: 'cells-0', kubeSwiftMachine: false, bootstrapConfig: false, released: false }] })
  t.ok(d.writeStatus)
})

t.test('objects that exist are never written; the generation is then carried out', async (t) => {
  const d = decideInfrastructure(
    input([entry()]),
    snapshot({ kubeSwiftMachines: { 'cells-0': owned() }, bootstrapConfigs: { 'cells-0': owned() } })
  )
  t.same(d.actions, [])
  t.same(d.status, {
    observedGeneration: 4,
    machines: [{ name: 'cells-0', kubeSwiftMachine: true, bootstrapConfig: true, released: false }]
  })
  const again = decideInfrastructure(
    input([entry()], d.status),
    snapshot({ kubeSwiftMachines: { 'cells-0': owned() }, bootstrapConfigs: { 'cells-0': owned() } })
  )
  t.notOk(again.writeStatus, 'the same status is not written twice')
})

t.test('without a bootstrap config (a data Secret of the pool) only the KubeSwiftMachine is made', async (t) => {
  const { bootstrapConfig: _, ...bare } = entry()
  const d = decideInfrastructure(input([bare]), snapshot())
  t.same(
    d.actions.map((a) => (a.type === 'create' ? a.object.kind : a.type)),
    ['KubeSwiftMachine']
  )
  t.equal(d.status.machines?.[0]?.bootstrapConfig, true)
})

t.test('a missing template: no config, and the row says which', async (t) => {
  const d = decideInfrastructure(input([entry()]), snapshot({ templates: {} }))
  t.same(
    d.actions.map((a) => (a.type === 'create' ? a.object.kind : a.type)),
    ['KubeSwiftMachine']
  )
  t.equal(
    d.status.machines?.[0]?.message,
    'KubeadmConfigTemplate gpu-join (bootstrap.cluster.x-k8s.io) does not exist; no KubeadmConfig is made without it'
  )
})

t.test('objects of an earlier Machine of the same name are waited for, not written', async (t) => {
  const d = decideInfrastructure(
    input([entry()]),
    snapshot({ kubeSwiftMachines: { 'cells-0': owned('uid-old') }, bootstrapConfigs: { 'cells-0': owned('uid-old') } })
  )
  t.same(d.actions, [])
  t.match(d.status.machines?.[0], {
    kubeSwiftMachine: false,
    bootstrapConfig: false,
    message: /KubeSwiftMachine cells-0 belongs to another Machine of this name; waiting for it to go/
  })
})

t.test('a Machine the pool does not control, or that is missing, gets nothing', async (t) => {
  for (const [what, machines] of [
    ['another pool', { 'cells-0': machine({ owner: 'uid-other' }) }],
    ['absent', {}]
  ] as const) {
    const d = decideInfrastructure(input([entry({ release: true })]), snapshot({ machines }))
    t.same(d.actions, [], `${what}: nothing written`)
    t.match(d.status.machines?.[0]?.message, /Machine cells-0 (is not controlled by this pool|does not exist)/)
  }
})

t.test('a Machine being deleted gets nothing created', async (t) => {
  const d = decideInfrastructure(input([entry()]), snapshot({ machines: { 'cells-0': machine({ deleting: true }) } }))
  t.same(d.actions, [])
})

t.test('release: exclude-node-draining on, both hooks off, guarded by the resourceVersion seen', async (t) => {
  const existing = { kubeSwiftMachines: { 'cells-0': owned() }, bootstrapConfigs: { 'cells-0': owned() } }
  const d = decideInfrastructure(
    input([entry({ release: true })]),
    snapshot({ ...existing, machines: { 'cells-0': machine({ deleting: true }) } })
  )
  t.same(d.actions, [
    {
      type: 'patchMachine',
      machine: 'cells-0',
      patch: {
        metadata: {
          resourceVersion: '41',
          annotations: { 'machine.cluster.x-k8s.io/exclude-node-draining': 'true', [PRE_DRAIN]: null, [PRE_TERMINATE]: null }
        }
      }
    }
  ])
  const released = machine({ deleting: true, annotations: { 'machine.cluster.x-k8s.io/exclude-node-draining': 'true' } })
  const done = decideInfrastructure(input([entry({ release: true })]), snapshot({ ...existing, machines: { 'cells-0': released } }))
  t.same(done.actions, [], 'a released Machine is not patched again')
  t.equal(done.status.machines?.[0]?.released, true)
  const kept = decideInfrastructure(input([entry()]), snapshot({ ...existing, machines: { 'cells-0': machine({ deleting: true }) } }))
  t.same(kept.actions, [], 'without release the hooks stay, also on a Machine someone else deletes')
})

t.test('a release names its Machine: a Machine rebuilt under the same name keeps its hooks', async (t) => {
  const existing = { kubeSwiftMachines: { 'cells-0': owned() }, bootstrapConfigs: { 'cells-0': owned() } }
  const stale = decideInfrastructure(input([entry({ release: true, machineUID: 'uid-earlier' })]), snapshot(existing))
  t.same(stale.actions, [], 'the entry of the Machine before is not carried out on this one')
  t.match(stale.status.machines?.[0], { released: false, message: /the release is for Machine uid uid-earlier/ })
  const own = decideInfrastructure(input([entry({ release: true, machineUID: 'uid-m0' })]), snapshot(existing))
  t.same(
    own.actions.map((a) => a.type),
    ['patchMachine'],
    'the Machine the release names is released'
  )
})

/** A fake infrastructure cluster: objects by `kind/name`, every call recorded. */
function fakeApi(objects: Record<string, unknown>, fail: Partial<Record<'get' | 'create' | 'patch', string>> = {}) {
  const calls: string[] = []
  const api: ObjectsApi = {
    getPool: async () => ({ metadata: { name: 'cells', uid: POOL_UID } }),
    async get(_apiVersion, kind, _namespace, name) {
      calls.push(`get ${kind} ${name}`)
      if (fail.get !== undefined) throw new Error(fail.get)
      return objects[`${kind}/${name}`]
    },
    async create(object) {
      const meta = object.metadata as { name: string }
      calls.push(`create ${String(object.kind)} ${meta.name}`)
      if (fail.create !== undefined) throw new Error(fail.create)
    },
    async patch(_apiVersion, kind, _namespace, name) {
      calls.push(`patch ${kind} ${name}`)
      if (fail.patch !== undefined) throw new Error(fail.patch)
    },
    async replaceStatus(_namespace, name) {
      calls.push(`status ${name}`)
    }
  }
  return { api, calls }
}
const stored = (machines: CellMachine[], owner = poolRef()): unknown => ({
  apiVersion: 'cells.kubeswift.io/v1alpha1',
  kind: 'CellInfrastructure',
  metadata: { name: 'cells', namespace: 'capi', generation: 2, resourceVersion: '9', ownerReferences: [owner] },
  spec: { poolUID: POOL_UID, machines }
})

t.test('a pass reads, creates and writes the status', async (t) => {
  const { api, calls } = fakeApi({ 'Machine/cells-0': machine(), 'KubeadmConfigTemplate/gpu-join': template })
  const report = await runInfrastructurePass(stored([entry()]), api)
  t.same(calls, [
    'get Machine cells-0',
    'get KubeSwiftMachine cells-0',
    'get KubeadmConfig cells-0',
    'get KubeadmConfigTemplate gpu-join',
    'create KubeSwiftMachine cells-0',
    'create KubeadmConfig cells-0',
    'status cells'
  ])
  t.match(report, { served: true, created: ['KubeSwiftMachine cells-0', 'KubeadmConfig cells-0'], errors: [], statusWritten: true })
})

t.test('a failed read does nothing; a failed write is reported and the status waits', async (t) => {
  const reads = fakeApi({}, { get: 'connection refused' })
  const r1 = await runInfrastructurePass(stored([entry()]), reads.api)
  t.same(reads.calls, ['get Machine cells-0'])
  t.same(r1.errors, [{ reason: 'InfrastructureRead', message: 'connection refused' }])
  const writes = fakeApi({ 'Machine/cells-0': machine(), 'KubeadmConfigTemplate/gpu-join': template }, { create: 'forbidden' })
  const r2 = await runInfrastructurePass(stored([entry()]), writes.api)
  t.equal(r2.errors.length, 2)
  t.notOk(r2.statusWritten)
})

t.test('not served: another controller, or a spec that fails its schema', async (t) => {
  const { api, calls } = fakeApi({})
  const other = await runInfrastructurePass(stored([entry()], { ...poolRef(), kind: 'Deployment' }), api)
  t.match(other, { served: false, notServed: /its controller is a Deployment, not a GPUCellPool/ })
  t.same(calls, [])
  const bad = readInfrastructure({
    metadata: { name: 'cells', namespace: 'capi' },
    spec: { poolUID: POOL_UID, machines: [{ name: 'cells-0' }] }
  })
  t.match(bad, /^spec\.machines\.0\.kubeSwiftMachine: .*nothing is done for it$/)
  t.equal(readInfrastructure('x'), 'not a CellInfrastructure')
})

t.test('an entry of another template hash than its Machine was written for an earlier Machine: nothing is created from it', async (t) => {
  const hashed = (hash: string): CellMachine => {
    const e = entry()
    e.kubeSwiftMachine.annotations = { 'cells.kubeswift.io/template-hash': hash }
    return e
  }
  const current = snapshot({ machines: { 'cells-0': machine({ annotations: { ...HOOKS, 'cells.kubeswift.io/template-hash': 'new' } }) } })
  const stale = decideInfrastructure(input([hashed('old')]), current)
  t.same(stale.actions, [])
  t.match(stale.status.machines, [
    { name: 'cells-0', message: /of template old, the Machine of new: it was written for an earlier Machine/ }
  ])
  t.same(
    decideInfrastructure(input([hashed('new')]), current).actions.map((a) => a.type),
    ['create', 'create'],
    'the entry of this Machine is carried out'
  )
})

t.test('a KubeSwiftMachine spec whose references carry more than a name is not created with the agent rights', async (t) => {
  const hostile = entry({
    kubeSwiftMachine: {
      spec: {
        backend: {
          type: 'SwiftGuest',
          swiftGuest: {
            imageRef: { name: 'noble', namespace: 'kube-system' },
            guestClassRef: { name: 'gpu', kind: 'ClusterSwiftGuestClass' },
            networkRef: { name: 'net', namespace: 'other' }
          }
        }
      }
    }
  })
  const d = decideInfrastructure(input([hostile]), snapshot())
  t.same(
    d.actions.map((a) => (a.type === 'create' ? a.object.kind : a.type)),
    ['KubeadmConfig'],
    'only the bootstrap config is made'
  )
  t.match(
    d.status.machines?.[0]?.message,
    /refers by more than a name \(spec\.backend\.swiftGuest\.imageRef\.namespace, .*guestClassRef\.kind, .*networkRef\.namespace\); it is not created/
  )
  t.same(
    refusedRefs({ backend: { swiftGuest: { imageRef: 'noble', guestClassRef: { name: 'gpu' } } } }),
    [],
    'a name, as a string or {name}, is fine'
  )
  t.same(refusedRefs({ backend: { swiftGuest: { imageRef: ['x'] } } }), ['spec.backend.swiftGuest.imageRef'])
})

t.test('a bootstrap config of another group or kind fails the CellInfrastructure schema: nothing is done for it', async (t) => {
  for (const config of [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'KubeadmConfig' },
    { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'Secret' }
  ]) {
    const e = entry()
    const read = readInfrastructure({
      metadata: { name: 'cells', namespace: 'capi' },
      spec: { poolUID: POOL_UID, machines: [{ ...e, bootstrapConfig: { ...e.bootstrapConfig, ...config } }] }
    })
    t.match(read, /^spec\.machines\.0\.bootstrapConfig\.(apiGroup|kind): .*nothing is done for it$/)
  }
})
