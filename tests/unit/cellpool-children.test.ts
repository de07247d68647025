import { createHash } from 'node:crypto'
import t from 'tap'
import { cellLabels } from '../../hooks/cellpool/request/cell-names.ts'
import { cellName } from '../../hooks/api/cellnodeset.ts'
import { buildBootstrapSecret, buildCellNode, buildCellNodeSet, hamiResources } from '../../hooks/cellpool/build/children.ts'
import { buildGuest, buildSeedProfile, templateHash } from '../../hooks/cellpool/provisioners/swift-guest.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { reversedKeys } from '../support/fields.ts'
import { patched, poolSpec } from './fixtures/cellpool.ts'
import type { ResolvedPool } from '../../hooks/cellpool/model/resolved-pool.ts'

const ID = { poolName: 'inference', namespace: 'ml', poolUID: 'uid-1', index: 2 }
const LABELS = {
  'app.kubernetes.io/managed-by': 'gpuhooks',
  'cells.kubeswift.io/cell': 'inference-2',
  'cells.kubeswift.io/cell-index': '2',
  'cells.kubeswift.io/pool': 'inference',
  'cells.kubeswift.io/pool-uid': 'uid-1'
}

/**
 * The fixture's pool with three replicas, storage, hugepages, the GPU backend left to its default,
 * a kubeconfig key, and Node labels, annotations and taints.
 */
const spec = (): Record<string, unknown> =>
  patched(poolSpec(), {
    replicas: 3,
    cell: { guestTemplate: { storage: { storageClassName: 'fast' } }, gpu: { backend: null, dra: { hugepages: '1Gi' } } },
    workloadCluster: {
      key: 'kubeconfig',
      node: {
        labels: { 'node-role.kubernetes.io/gpu-cell': '' },
        annotations: { 'example.com/owner': 'ml' },
        taints: [{ key: 'example.com/cell', value: 'true', effect: 'NoSchedule' }]
      }
    }
  })
/** That pool with `patch` merged in (a JSON merge patch: `null` removes), resolved. */
const pool = (patch: Record<string, unknown> = {}): ResolvedPool => resolvePool(patched(spec(), patch))

t.test('cell names and labels', async (t) => {
  t.equal(cellName('inference', 0), 'inference-0')
  t.equal(cellName('inference', 12), 'inference-12')
  t.same(cellLabels('inference', 'uid-1', 'inference-2', 2), {
    'cells.kubeswift.io/cell': 'inference-2',
    'cells.kubeswift.io/cell-index': '2',
    'cells.kubeswift.io/pool': 'inference',
    'cells.kubeswift.io/pool-uid': 'uid-1'
  })
})

t.test('the bootstrap Secret holds the rendered text in data under user-data and value', async (t) => {
  const text = '#cloud-config\nruncmd: [kubeadm join]\n'
  const encoded = 'I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtrdWJlYWRtIGpvaW5dCg=='
  t.same(buildBootstrapSecret(ID, text), {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'inference-2-bootstrap', namespace: 'ml', labels: LABELS },
    type: 'Opaque',
    data: { 'user-data': encoded, value: encoded }
  })
  t.notOk('stringData' in buildBootstrapSecret(ID, text), 'never stringData')
  t.equal(Buffer.from(encoded, 'base64').toString('utf8'), text)
})

t.test('the seed profile reads user data from the bootstrap Secret and names the host after the cell', async (t) => {
  t.same(buildSeedProfile(ID, 'CellName'), {
    apiVersion: 'seed.kubeswift.io/v1alpha1',
    kind: 'SwiftSeedProfile',
    metadata: { name: 'inference-2-seed', namespace: 'ml', labels: LABELS },
    spec: {
      datasource: 'NoCloud',
      metaData: 'instance-id: inference-2\nlocal-hostname: inference-2\n',
      userData: '',
      userDataFrom: { secretKeyRef: { key: 'user-data', name: 'inference-2-bootstrap' } }
    }
  })
  t.notOk('metaData' in (buildSeedProfile(ID, 'None').spec as object), 'hostname None: no meta data')
})

t.test('the guest is the template verbatim with the controller overlay (DRA)', async (t) => {
  const p = pool()
  t.same(buildGuest(p, ID), {
    apiVersion: 'swift.kubeswift.io/v1alpha1',
    kind: 'SwiftGuest',
    metadata: {
      name: 'inference-2',
      namespace: 'ml',
      labels: LABELS,
      annotations: { 'cells.kubeswift.io/template-hash': templateHash(p) }
    },
    spec: {
      gpuResourceClaim: { hugepages: '1Gi', requestName: 'gpu', resourceClaimTemplateName: 'single-vfio-gpu', tier: 'pcie' },
      guestClassRef: { name: 'gpu-worker' },
      imageRef: { name: 'gpu-noble' },
      interfaces: [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'lan' } }],
      migration: { enabled: false },
      runPolicy: 'Always',
      seedProfileRef: { name: 'inference-2-seed' },
      storage: { storageClassName: 'fast' }
    }
  })
})

t.test('the guest takes a shared claim, or a native profile; empty hugepages are left out', async (t) => {
  const shared = buildGuest(
    pool({
      replicas: 1,
      cell: { gpu: { dra: { resourceClaimTemplateName: null, hugepages: null, resourceClaimName: 'one-gpu', requestName: 'dev' } } }
    }),
    ID
  )
  t.same((shared.spec as Record<string, unknown>).gpuResourceClaim, { requestName: 'dev', resourceClaimName: 'one-gpu', tier: 'pcie' })
  const native = buildGuest(pool({ cell: { gpu: { backend: 'Native', dra: null, native: { gpuProfileRef: { name: 'a100' } } } } }), ID)
  t.same((native.spec as Record<string, unknown>).gpuProfileRef, { name: 'a100' })
  t.notOk('gpuResourceClaim' in (native.spec as object))
})

t.test('the guest keys are sorted and the build is deterministic', async (t) => {
  const p = pool()
  const guest = buildGuest(p, ID)
  t.same(Object.keys(guest.spec as object), [...Object.keys(guest.spec as object)].sort())
  t.equal(JSON.stringify(buildGuest(p, ID)), JSON.stringify(guest))
  t.equal(
    JSON.stringify(buildGuest(resolvePool(reversedKeys(spec())), ID)),
    JSON.stringify(guest),
    'the key order of the spec does not matter'
  )
})

t.test('the template hash is the first 10 hex of SHA-256 over guestTemplate, gpu, nodeIPFrom and hostname', async (t) => {
  const p = pool()
  const canonical =
    '{"gpu":{"backend":"DRA","count":1,"dra":{"claim":{"kind":"resourceClaimTemplateName","name":"single-vfio-gpu"},"hugepages":"1Gi","requestName":"gpu","tier":"pcie"}},' +
    '"guestTemplate":{"guestClassRef":{"name":"gpu-worker"},"imageRef":{"name":"gpu-noble"},"interfaces":[{"name":"primary"},{"name":"routable","networkRef":{"name":"lan"}}],"storage":{"storageClassName":"fast"}},' +
    '"hostname":"CellName","nodeIPFrom":"routable"}'
  t.equal(templateHash(p), createHash('sha256').update(canonical).digest('hex').slice(0, 10))
  t.match(templateHash(p), /^[0-9a-f]{10}$/)
  const changes: Array<[string, Record<string, unknown>]> = [
    ['guestTemplate', { cell: { guestTemplate: { imageRef: { name: 'gpu-noble-2' } } } }],
    ['gpu', { cell: { gpu: { dra: { hugepages: '2Mi' } } } }],
    ['nodeIPFrom', { cell: { nodeIPFrom: 'primary' } }],
    ['hostname', { bootstrap: { hostname: 'None' } }]
  ]
  for (const [what, change] of changes) t.not(templateHash(pool(change)), templateHash(p), `a change of ${what} changes the hash`)
  const same: Array<[string, Record<string, unknown>]> = [
    ['replicas', { replicas: 5 }],
    ['node labels', { workloadCluster: { node: { labels: { extra: 'x' } } } }],
    ['a default written out', { cell: { gpu: { backend: 'DRA', count: 1, dra: { tier: 'pcie' } } }, bootstrap: { hostname: 'CellName' } }]
  ]
  for (const [what, change] of same) t.equal(templateHash(pool(change)), templateHash(p), `${what} leaves the hash`)
})

t.test('a CellNodeSet entry: labels, instance once known, annotations, taints and cordon', async (t) => {
  const p = pool()
  t.same(buildCellNode(p, ID, 'guest-uid', true), {
    annotations: { 'example.com/owner': 'ml' },
    cordon: true,
    instance: 'guest-uid',
    labels: {
      'cells.kubeswift.io/cell': 'inference-2',
      'cells.kubeswift.io/cell-index': '2',
      'cells.kubeswift.io/instance': 'guest-uid',
      'cells.kubeswift.io/pool': 'inference',
      'cells.kubeswift.io/pool-uid': 'uid-1',
      gpu: 'on',
      'node-role.kubernetes.io/gpu-cell': ''
    },
    name: 'inference-2',
    taints: [{ effect: 'NoSchedule', key: 'example.com/cell', value: 'true' }]
  })
  const bare = pool({ workloadCluster: { node: { labels: null, annotations: null, taints: null } } })
  t.same(
    buildCellNode(bare, ID, '', false),
    {
      cordon: false,
      labels: {
        'cells.kubeswift.io/cell': 'inference-2',
        'cells.kubeswift.io/cell-index': '2',
        'cells.kubeswift.io/pool': 'inference',
        'cells.kubeswift.io/pool-uid': 'uid-1'
      },
      name: 'inference-2'
    },
    'no instance before the guest exists, no empty collections'
  )
})

t.test('the CellNodeSet: kubeconfig, pool uid, entries in index order, demand only with autoscaling', async (t) => {
  const p = pool()
  const node = (index: number) => buildCellNode(p, { ...ID, index }, '', false)
  const set = buildCellNodeSet('inference', 'ml', 'uid-1', p, [node(10), node(2), node(9)], true)
  t.same(set, {
    apiVersion: 'cells.kubeswift.io/v1alpha1',
    kind: 'CellNodeSet',
    metadata: {
      name: 'inference',
      namespace: 'ml',
      labels: { 'app.kubernetes.io/managed-by': 'gpuhooks', 'cells.kubeswift.io/pool': 'inference', 'cells.kubeswift.io/pool-uid': 'uid-1' }
    },
    spec: {
      demand: {
        nodeLabels: {
          'cells.kubeswift.io/pool': 'inference',
          'cells.kubeswift.io/pool-uid': 'uid-1',
          gpu: 'on',
          'node-role.kubernetes.io/gpu-cell': ''
        },
        resources: ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'],
        taints: [{ effect: 'NoSchedule', key: 'example.com/cell', value: 'true' }]
      },
      kubeconfigSecretRef: { key: 'kubeconfig', name: 'kc' },
      nodes: [node(2), node(9), node(10)],
      physicalGPUs: { driver: 'gpu.kubeswift.io' },
      poolUID: 'uid-1'
    }
  })
  const quiet = buildCellNodeSet('inference', 'ml', 'uid-1', pool({ workloadCluster: { key: null } }), [], false)
  t.same(
    quiet.spec,
    { kubeconfigSecretRef: { key: 'value', name: 'kc' }, physicalGPUs: { driver: 'gpu.kubeswift.io' }, poolUID: 'uid-1' },
    'no nodes, no demand: both left out; a DRA pool asks for the physical GPUs'
  )
})

t.test("HAMi's DRA mode names the pool's DeviceClass in the CellNodeSet", async (t) => {
  const dra = pool({
    workloadCluster: { key: null },
    capacity: { hami: { mode: 'DRA', deviceClassName: 'hami-core-gpu.project-hami.io' } }
  })
  t.same((buildCellNodeSet('inference', 'ml', 'uid-1', dra, [], false).spec as { dra?: unknown }).dra, {
    deviceClassName: 'hami-core-gpu.project-hami.io'
  })
})

t.test('HAMi resource names derive from resourceName', async (t) => {
  t.same(hamiResources('nvidia.com/gpu'), ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'])
  t.same(hamiResources('example.com/vgpu'), ['example.com/vgpu', 'example.com/vgpumem', 'example.com/vgpucores'])
})

t.test('builders never share structure with the resolved pool', async (t) => {
  const p = pool()
  const guest = buildGuest(p, ID)
  ;((guest.spec as Record<string, any>).imageRef as { name: string }).name = 'changed'
  t.equal((p.guestTemplate.imageRef as { name: string }).name, 'gpu-noble')
  const node = buildCellNode(p, ID, '', false)
  node.taints?.push({ key: 'x', effect: 'NoSchedule' })
  t.equal(p.workload.taints.length, 1)
})
