import t from 'tap'
import {
  answerCellInfrastructure,
  buildCellInfrastructure,
  buildCellMachine,
  buildMachine,
  kubeSwiftMachineSpec,
  machineProvisioned,
  readMachine,
  withProviderID
} from '../../hooks/cellpool/provisioners/clusterapi-children.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { poolSpec } from './fixtures/cellpool.ts'

const ID = { poolName: 'cells', namespace: 'capi', poolUID: 'uid-pool', index: 3 }
const LABELS = {
  'app.kubernetes.io/managed-by': 'gpuhooks',
  'cells.kubeswift.io/cell': 'cells-3',
  'cells.kubeswift.io/cell-index': '3',
  'cells.kubeswift.io/pool': 'cells',
  'cells.kubeswift.io/pool-uid': 'uid-pool'
}
const HOOKS = {
  'cells.kubeswift.io/template-hash': 'abc1234567',
  'pre-drain.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain': 'gpuhooks',
  'pre-terminate.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain': 'gpuhooks'
}
const TEMPLATE = { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'gpu-join' }

t.test('a Machine with the pool data Secret: the hooks from creation, nothing Cluster API writes', async (t) => {
  t.same(buildMachine({ clusterName: 'gpu', version: '' }, ID, 'abc1234567'), {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: { name: 'cells-3', namespace: 'capi', labels: LABELS, annotations: HOOKS },
    spec: {
      bootstrap: { dataSecretName: 'cells-3-bootstrap' },
      clusterName: 'gpu',
      infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'KubeSwiftMachine', name: 'cells-3' }
    }
  })
})

t.test('a Machine with a bootstrap config template references the config of its kind without Template', async (t) => {
  const machine = buildMachine({ clusterName: 'gpu', version: 'v1.33.3', bootstrapTemplate: TEMPLATE }, ID, 'abc1234567')
  t.same(machine.spec, {
    bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'cells-3' } },
    clusterName: 'gpu',
    infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'KubeSwiftMachine', name: 'cells-3' },
    version: 'v1.33.3'
  })
})

t.test('the KubeSwiftMachine spec: image, class, the two networks, the GPU (DRA or Native)', async (t) => {
  const dra = resolvePool(
    poolSpec({
      cell: {
        guestTemplate: {
          imageRef: { name: 'noble' },
          guestClassRef: { name: 'gpu' },
          interfaces: [
            { name: 'primary', networkRef: { name: 'pods' } },
            { name: 'routable', networkRef: { name: 'lan' } }
          ]
        },
        gpu: { backend: 'DRA', dra: { resourceClaimTemplateName: 'vfio', hugepages: '1Gi' } }
      }
    })
  )
  t.same(kubeSwiftMachineSpec(dra), {
    backend: {
      swiftGuest: {
        gpu: { hugepages: '1Gi', requestName: 'gpu', resourceClaimTemplateName: 'vfio', tier: 'pcie' },
        guestClassRef: { name: 'gpu' },
        imageRef: { name: 'noble' },
        networkRef: { name: 'pods' },
        nodeNetworkRef: { name: 'lan' }
      },
      type: 'SwiftGuest'
    }
  })
  const native = resolvePool(
    poolSpec({
      cell: {
        guestTemplate: { imageRef: { name: 'noble' }, guestClassRef: { name: 'gpu' } },
        gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } }
      }
    })
  )
  t.same(kubeSwiftMachineSpec(native).backend, {
    swiftGuest: { gpu: { gpuProfileRef: { name: 'a100' } }, guestClassRef: { name: 'gpu' }, imageRef: { name: 'noble' } },
    type: 'SwiftGuest'
  })
})

t.test('the CellInfrastructure entry and the object, entries in index order', async (t) => {
  const pool = resolvePool(poolSpec())
  const capi = { clusterName: 'gpu', version: '', bootstrapTemplate: TEMPLATE }
  const entry = buildCellMachine(pool, capi, ID, 'abc1234567', true)
  const objectLabels = { ...LABELS, 'cluster.x-k8s.io/cluster-name': 'gpu' }
  t.same(entry, {
    name: 'cells-3',
    kubeSwiftMachine: {
      labels: objectLabels,
      annotations: { 'cells.kubeswift.io/template-hash': 'abc1234567' },
      spec: kubeSwiftMachineSpec(pool)
    },
    bootstrapConfig: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', labels: objectLabels, templateName: 'gpu-join' },
    release: true
  })
  t.equal(
    buildCellMachine(pool, { clusterName: 'gpu', version: '' }, ID, 'h', false).bootstrapConfig,
    undefined,
    'no config without a template'
  )
  const second = buildCellMachine(pool, capi, { ...ID, index: 10 }, 'h', false)
  const first = buildCellMachine(pool, capi, { ...ID, index: 2 }, 'h', false)
  const infra = buildCellInfrastructure('cells', 'capi', 'uid-pool', [second, first])
  t.same(
    (infra.spec as { machines: { name: string }[] }).machines.map((m) => m.name),
    ['cells-2', 'cells-10']
  )
  t.same(infra.metadata, {
    name: 'cells',
    namespace: 'capi',
    labels: { 'app.kubernetes.io/managed-by': 'gpuhooks', 'cells.kubeswift.io/pool': 'cells', 'cells.kubeswift.io/pool-uid': 'uid-pool' }
  })
  t.same(buildCellInfrastructure('cells', 'capi', 'uid-pool', []).spec, { poolUID: 'uid-pool' })
})

t.test('an observed Machine read defensively', async (t) => {
  const view = readMachine({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name: 'cells-3',
      uid: 'uid-m',
      deletionTimestamp: '2026-12-01T00:00:00Z',
      annotations: { 'cells.kubeswift.io/template-hash': 'h1' }
    },
    spec: { providerID: 'kubeswift://capi/cells-3' },
    status: {
      phase: 'Running',
      nodeRef: { name: 'cells-3' },
      conditions: [
        { type: 'Available', status: 'True' },
        { type: 'NodeHealthy', status: 'False', reason: 'NodeNotReady', message: 'Node cells-3 is not ready' }
      ]
    }
  })
  t.same(view, {
    name: 'cells-3',
    uid: 'uid-m',
    phase: 'Running',
    providerID: 'kubeswift://capi/cells-3',
    nodeName: 'cells-3',
    deleting: true,
    templateHash: 'h1',
    notReady: { type: 'NodeHealthy', reason: 'NodeNotReady', message: 'Node cells-3 is not ready' }
  })
  t.ok(machineProvisioned(view))
  const odd = readMachine({
    apiVersion: 'x',
    kind: 'Machine',
    metadata: { name: 'm' },
    spec: 'no',
    status: { conditions: 'no', phase: 3 }
  })
  t.same(odd, {
    name: 'm',
    uid: '',
    phase: undefined,
    providerID: undefined,
    nodeName: undefined,
    deleting: false,
    templateHash: undefined,
    notReady: undefined
  })
  t.notOk(machineProvisioned(odd))
})

t.test('a CellNodeSet entry gets the providerID once the Machine has one', async (t) => {
  const node = { name: 'cells-3', cordon: false }
  t.same(withProviderID(node, undefined), node)
  t.same(
    withProviderID(node, {
      ...readMachine({ apiVersion: 'x', kind: 'Machine', metadata: { name: 'cells-3' }, spec: { providerID: 'kubeswift://capi/cells-3' } })
    }),
    {
      cordon: false,
      name: 'cells-3',
      providerID: 'kubeswift://capi/cells-3'
    }
  )
})

/** The CellInfrastructure spec answered for cell 0 of `machine`, with `children` answered and `entry` observed. */
function infrastructureFor(
  pool: ReturnType<typeof resolvePool>,
  machine: ReturnType<typeof buildMachine>,
  children: ReturnType<typeof buildMachine>[],
  entry: ReturnType<typeof buildCellMachine>
): unknown {
  return answerCellInfrastructure({
    pool,
    poolName: 'cells',
    namespace: 'capi',
    poolUID: 'uid-pool',
    cells: [{ index: 0, machine }],
    children,
    observed: { object: buildCellInfrastructure('cells', 'capi', 'uid-pool', [entry]), machines: new Map([['cells-0', entry]]) }
  }).spec
}

t.test('an observed entry is kept for its Machine only when it carries the Machine template hash', async (t) => {
  const pool = resolvePool(poolSpec())
  const capi = { clusterName: 'gpu', version: '' }
  const id = { ...ID, index: 0 }
  const machine = buildMachine(capi, id, 'new-hash')
  const earlier = buildCellMachine(pool, capi, id, 'old-hash', true)
  earlier.kubeSwiftMachine.spec = { backend: { type: 'SwiftGuest', swiftGuest: { imageRef: { name: 'earlier' } } } }
  const answer = (entry: typeof earlier) =>
    infrastructureFor(pool, machine, [machine], entry) as {
      machines: Array<{ kubeSwiftMachine: { annotations: Record<string, string>; spec: unknown } }>
    }
  const rebuilt = answer(earlier).machines[0]
  t.equal(
    rebuilt?.kubeSwiftMachine.annotations['cells.kubeswift.io/template-hash'],
    'new-hash',
    'the entry of an earlier Machine is not kept'
  )
  t.same(rebuilt?.kubeSwiftMachine.spec, kubeSwiftMachineSpec(pool), "this Machine's entry is built from the pool")
  const own = buildCellMachine(pool, capi, id, 'new-hash', false)
  own.kubeSwiftMachine.spec = { recorded: true }
  t.same(answer(own).machines[0]?.kubeSwiftMachine.spec, { recorded: true }, 'its own entry is kept as observed')
})

t.test('a Machine the answer lets go: its entry says release and names its uid; a kept release is dropped once answered', async (t) => {
  const pool = resolvePool(poolSpec())
  const capi = { clusterName: 'gpu', version: '' }
  const id = { ...ID, index: 0 }
  const machine = { ...buildMachine(capi, id, 'h'), metadata: { ...buildMachine(capi, id, 'h').metadata, uid: 'uid-m0' } }
  const observedEntry = { ...buildCellMachine(pool, capi, id, 'h', true), machineUID: 'uid-earlier' }
  const answer = (children: (typeof machine)[]) =>
    infrastructureFor(pool, machine, children, observedEntry) as { machines: Array<{ release?: boolean; machineUID?: string }> }
  const letGo = answer([]).machines[0]
  t.same([letGo?.release, letGo?.machineUID], [true, 'uid-m0'], 'the release names the Machine observed now')
  const kept = answer([machine]).machines[0]
  t.same([kept?.release, kept?.machineUID], [undefined, undefined], 'an answered Machine is not released')
})
