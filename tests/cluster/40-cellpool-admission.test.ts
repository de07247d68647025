// The GPUCellPool API on a real API server (docs/api.md, docs/cellpool.md "Admission"): the CRD takes a
// gpucellpool v0.1.1 manifest under kubectl's strict field validation, its scale subresource
// and printer columns work, every CEL rule refuses its case with its own message, the admission
// webhook refuses through `kubectl apply` what CEL cannot judge (all problems in one answer), the
// examples apply, the children the builders render are accepted by the CellNodeSet CRD and by
// open-schema stand-ins for KubeSwift's, and the ValidatingAdmissionPolicy lets only
// Metacontroller write a CellNodeSet's spec.
import { join } from 'node:path'
import t from 'tap'
import { buildBootstrapSecret, buildCellNode, buildCellNodeSet } from '../../hooks/cellpool/build/children.ts'
import { buildGuest, buildSeedProfile } from '../../hooks/cellpool/provisioners/swift-guest.ts'
import { MAX_BOOTSTRAP_BYTES, MAX_NODE_SET_BYTES } from '../../hooks/cellpool/model/limits.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/metacontroller/observed.ts'
import type { JsonObject } from '../support/merge.ts'
import { CELLS, poolManifest, poolSpecWith } from './support/cellpool.ts'
import { eventually, KUBESWIFT_CRDS } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { celMessages, documents, objectAt } from './support/manifests.ts'
import type { ResourceRef } from './support/kube.ts'
import type { CellIdentity } from '../../hooks/cellpool/model/provisioner.ts'
import { nodeSetBytes, nodeSetEntryBytes } from '../../hooks/cellpool/build/sizes.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const NS = 'pools'
const METACONTROLLER = 'system:serviceaccount:metacontroller:metacontroller'

const { cluster, kube } = await startScenario({ extraCrds: [KUBESWIFT_CRDS] })

const poolRef = (name: string): ResourceRef => ({ apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name })

/** A valid pool spec of one cell (tests/unit/fixtures/cellpool.ts); cases change one thing, as a merge patch. */
const spec = (patch: JsonObject = {}): JsonObject => poolSpecWith({ replicas: 1, ...patch })
const pool = (name: string, patch: JsonObject = {}): JsonObject => poolManifest(name, NS, { replicas: 1, ...patch })

/** A user's apply, whose refusal is the answer the cases look at. */
const attempt = (object: JsonObject, args: string[] = []) => apply(cluster, object, { args, allowFail: true })

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', NS])
})

t.test('a gpucellpool v0.1.1 manifest with every field applies under strict field validation', async (t) => {
  const full = pool('full', {
    replicas: 1,
    cell: {
      provisioner: 'SwiftGuest',
      guestTemplate: { guestClassRef: { name: 'gpu-worker' }, imageRef: { name: 'gpu-noble' }, interfaces: [{ name: 'routable' }] },
      gpu: {
        count: 1,
        backend: 'DRA',
        dra: { resourceClaimTemplateName: 'single-vfio-gpu', requestName: 'gpu', tier: 'pcie', hugepages: '1Gi' }
      },
      spreadPolicy: 'Spread',
      nodeIPFrom: 'routable',
      clusterAPI: {
        clusterName: 'capi',
        version: 'v1.31.0',
        bootstrapConfigTemplateRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'cells' }
      }
    },
    bootstrap: {
      provider: 'Opaque',
      joinSecretRef: { name: 'join' },
      joinSecretKey: 'user-data',
      hostname: 'CellName',
      readyTimeout: '15m'
    },
    workloadCluster: {
      kubeconfigSecretRef: { name: 'kubeconfig' },
      key: 'value',
      node: {
        labels: { gpu: 'on' },
        annotations: { 'example.com/owner': 'ml' },
        taints: [{ key: 'example.com/cell', value: 'true', effect: 'NoSchedule', timeAdded: '2026-01-01T00:00:00Z' }]
      }
    },
    capacity: {
      provider: 'HAMi',
      readyTimeout: '5m',
      hami: { mode: 'DevicePlugin', expectedDevicesPerCell: 1, deviceClassName: 'hami-gpu', resourceName: 'nvidia.com/gpu' }
    },
    autoscaling: {
      enabled: true,
      minReplicas: 1,
      maxReplicas: 1,
      stabilizationWindow: '10m',
      scaleDown: 'Auto',
      scaleDownStabilizationWindow: '30m'
    },
    deletion: { policy: 'Drain', drainTimeout: '10m' },
    updatePolicy: { type: 'RollingUpdate' }
  })
  const { code, stdout, stderr } = await attempt(full, ['--validate=strict'])
  t.equal(code, 0, `${stdout} ${stderr}`)
  t.match(stderr, /Warning: spec\.cell\.clusterAPI is not acted on/, 'fields not acted on are named in a warning')
  t.match(stderr, /Warning: spec\.capacity\.hami\.deviceClassName is not acted on/)
  const stored = (await kube.get(poolRef('full'))).body
  t.hasStrict(stored.spec, full.spec, 'every field is stored as written: nothing pruned')

  const unknown = pool('unknown-field', { cell: { bogus: true } })
  const refused = await attempt(unknown, ['--validate=strict'])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /unknown field "spec\.cell\.bogus"/, 'strict validation is in force')
})

t.test('the defaults of docs/api.md are filled in by the API server', async (t) => {
  t.equal((await attempt(pool('defaults', { cell: { gpu: { backend: null } } }))).code, 0, 'a pool without the defaulted fields')
  const stored = (await kube.get(poolRef('defaults'))).body
  t.match(stored.spec, {
    replicas: 1,
    cell: {
      provisioner: 'SwiftGuest',
      spreadPolicy: 'Spread',
      gpu: { count: 1, backend: 'DRA', dra: { requestName: 'gpu', tier: 'pcie' } }
    },
    bootstrap: { provider: 'Opaque', joinSecretKey: 'user-data', hostname: 'CellName', readyTimeout: '15m' },
    workloadCluster: { key: 'value' }
  })
})

t.test('the scale subresource drives spec.replicas and reads the cell count and selector', async (t) => {
  t.equal((await attempt(pool('scaled'))).code, 0)
  await cluster.kubectl(['scale', '-n', NS, 'gpucellpool/scaled', '--replicas=3'])
  t.equal(objectAt((await kube.get(poolRef('scaled'))).body, 'spec').replicas, 3, 'kubectl scale sets spec.replicas')
  const current = (await kube.get(poolRef('scaled'))).body
  const status: JsonObject = {
    observedGeneration: 2,
    replicas: 2,
    readyCells: 1,
    creatingCells: 1,
    drainingCells: 0,
    failedCells: 0,
    desiredReplicas: 3,
    selector: 'cells.kubeswift.io/pool=scaled',
    demand: { pendingPods: 2, satisfiable: 1, lastObserved: '2026-01-02T03:04:05Z' },
    cellDeviceShape: { memoryMiB: 81920, cores: 100, type: 'NVIDIA A100-SXM4-80GB' },
    lastScaleUpTime: '2026-01-02T03:00:00Z',
    lastScaleDownTime: '2026-01-01T03:00:00Z',
    demandFreeSince: '2026-01-02T02:00:00Z',
    cells: [
      {
        name: 'scaled-0',
        index: 0,
        phase: 'Ready',
        reason: 'Ready',
        message: 'The cell Node is Ready with 1 healthy device.',
        guestUID: 'guest-uid-0',
        hostNode: 'gpu-host-1',
        devices: ['0000:41:00.0'],
        nodeIP: '10.20.0.11',
        nodeName: 'scaled-0',
        templateHash: '0123456789',
        failureCount: 0,
        readyOnce: true,
        lastTransitionTime: '2026-01-02T03:04:05Z'
      },
      {
        name: 'scaled-1',
        index: 1,
        phase: 'Joining',
        reason: 'NodeNotReady',
        message: 'Waiting for the Node.',
        failureCount: 1,
        readyOnce: false,
        lastTransitionTime: '2026-01-02T03:04:05Z'
      }
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'CellsNotReady',
        message: '1 of 3 cells Ready.',
        lastTransitionTime: '2026-01-02T03:04:05Z',
        observedGeneration: 2
      },
      {
        type: 'Progressing',
        status: 'True',
        reason: 'Creating',
        message: '1 cell being created.',
        lastTransitionTime: '2026-01-02T03:04:05Z',
        observedGeneration: 2
      }
    ]
  }
  await kube.updateStatus(poolRef('scaled'), { ...current, status })
  t.same((await kube.get(poolRef('scaled'))).body.status, status, 'a status with every field reads back unpruned')
  const scale = (await kube.request('GET', `/apis/cells.kubeswift.io/v1alpha1/namespaces/${NS}/gpucellpools/scaled/scale`)).body
  t.match(scale, { kind: 'Scale', spec: { replicas: 3 }, status: { replicas: 2, selector: 'cells.kubeswift.io/pool=scaled' } })
  const { stdout } = await cluster.kubectl(['get', '-n', NS, 'gpucellpool', 'scaled'])
  const [header, row] = stdout.trim().split('\n')
  t.match(header, /^NAME\s+DESIRED\s+READY\s+AVAILABLE\s+AGE$/, 'printer columns')
  t.match(row, /^scaled\s+3\s+1\s+False\s+\S+$/)
})

// ---------------------------------------------------------------------------------------------
// CEL rules: the API server refuses these before it calls the webhook, with the rule's message.

interface Case {
  name: string
  object: JsonObject
  message: string
}

const NAME_RULE =
  'a GPUCellPool name must be a DNS label of at most 57 characters (lower-case letters, digits and -, ' +
  'starting and ending with a letter or digit), so that its cell names <pool>-<index> stay Node names'

const CLAIM_RULE = 'set exactly one of resourceClaimTemplateName and resourceClaimName'
const BACKEND_RULE = 'backend DRA needs dra and no native; backend Native needs native and no dra'
const POSITIVE_DURATION = 'must be a positive duration such as 90s, 15m or 1h30m'
const DURATION = 'must be a duration such as 0s, 90s, 15m or 1h30m'
/** The dra of a pool with a claim of its own instead of a claim template. */
const SHARED_CLAIM = { resourceClaimTemplateName: null, resourceClaimName: 'shared' }

/** Each case's pool is the valid one with a merge patch that breaks one rule. */
const CEL_CASES: Case[] = [
  { name: 'a name of 58 characters', object: pool('p'.repeat(58)), message: NAME_RULE },
  { name: 'a name with a dot', object: pool('pool.a'), message: NAME_RULE },
  {
    name: 'both claim names',
    object: pool('both-claims', { cell: { gpu: { dra: { resourceClaimName: 'shared' } } } }),
    message: CLAIM_RULE
  },
  {
    name: 'no claim name',
    object: pool('no-claim', { cell: { gpu: { dra: { resourceClaimTemplateName: null, requestName: 'gpu' } } } }),
    message: CLAIM_RULE
  },
  { name: 'DRA without dra', object: pool('dra-missing', { cell: { gpu: { backend: 'DRA', dra: null } } }), message: BACKEND_RULE },
  {
    name: 'Native with dra',
    object: pool('native-dra', { cell: { gpu: { backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } } } }),
    message: BACKEND_RULE
  },
  {
    name: 'a shared claim for three cells',
    object: pool('shared-three', { replicas: 3, cell: { gpu: { dra: SHARED_CLAIM } } }),
    message: 'cell.gpu.dra.resourceClaimName backs one VM: only for a pool of at most one cell; use resourceClaimTemplateName'
  },
  {
    name: 'autoscaling without maxReplicas',
    object: pool('no-max', { autoscaling: { enabled: true } }),
    message: 'maxReplicas is required when autoscaling is enabled'
  },
  {
    name: 'minReplicas above maxReplicas',
    object: pool('min-max', { autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 2 } }),
    message: 'minReplicas must not exceed maxReplicas'
  },
  {
    name: 'scaleDown Auto without minReplicas',
    object: pool('auto-no-min', { autoscaling: { enabled: true, maxReplicas: 2, scaleDown: 'Auto' } }),
    message: 'scaleDown Auto needs minReplicas'
  },
  {
    name: 'a readyTimeout that is no duration',
    object: pool('ready-bad', { bootstrap: { readyTimeout: '15 minutes' } }),
    message: POSITIVE_DURATION
  },
  { name: 'a zero capacity readyTimeout', object: pool('capacity-zero', { capacity: { readyTimeout: '0s' } }), message: POSITIVE_DURATION },
  {
    name: 'a negative stabilizationWindow',
    object: pool('window-negative', { autoscaling: { stabilizationWindow: '-1m' } }),
    message: DURATION
  },
  { name: 'a drainTimeout in days', object: pool('drain-days', { deletion: { drainTimeout: '1d' } }), message: DURATION },
  {
    name: 'HAMi DRA mode without its DeviceClass',
    object: pool('hami-dra-no-class', { capacity: { hami: { mode: 'DRA' } } }),
    message:
      "spec.capacity.hami.deviceClassName is required with mode DRA: it names the DeviceClass of HAMi's DRA driver in the workload cluster"
  }
]

t.test('every CEL rule of the cell pool CRDs has a case in the table', async (t) => {
  const crds = ['gpucellpools.cells.kubeswift.io', 'cellnodesets.cells.kubeswift.io'].map(
    (name) => documents(join(ROOT, 'crds', `${name}.yaml`))[0]
  )
  const declared = [...new Set(crds.flatMap((crd) => celMessages(crd)))].sort()
  const covered = new Set(CEL_CASES.map((c) => c.message))
  t.ok(declared.length >= 8, `${declared.length} rules`)
  t.same(
    declared.filter((m) => !covered.has(m)),
    [],
    'no rule without a case'
  )
  t.same(
    [...covered].filter((m) => !declared.includes(m)),
    [],
    'no case for a rule the CRDs lack'
  )
})

t.test('each CEL rule refuses its case through kubectl apply', async (t) => {
  for (const c of CEL_CASES) {
    const { code, stderr } = await attempt(c.object)
    t.equal(code, 1, `${c.name}: kubectl exits 1`)
    t.ok(stderr.includes(c.message), `${c.name}: the CEL message\n  got: ${stderr.trim()}`)
  }
  t.equal((await attempt(pool('p'.repeat(57)))).code, 0, 'a name of 57 characters is accepted')
  t.equal((await attempt(pool('shared-one', { cell: { gpu: { dra: SHARED_CLAIM } } }))).code, 0, 'a shared claim for one cell is accepted')
})

// ---------------------------------------------------------------------------------------------
// The webhook: what CEL cannot judge (an open guestTemplate, behaviour this version lacks,
// cross-field references, label syntax), refused with every problem at once.

const WEBHOOK_CASES: Array<{ name: string; object: JsonObject; messages: string[] }> = [
  {
    name: 'fields the controller sets, and GPU-path refusals, all at once',
    object: pool('denylist', {
      cell: { guestTemplate: { seedProfileRef: { name: 'mine' }, runPolicy: 'Running', kernelRef: { name: 'k' }, osType: 'windows' } }
    }),
    messages: [
      'spec.cell.guestTemplate.seedProfileRef is set by the controller and must not be set here',
      'spec.cell.guestTemplate.runPolicy is set by the controller and must not be set here',
      'spec.cell.guestTemplate.kernelRef is not supported on the GPU path',
      'spec.cell.guestTemplate.osType windows is not supported on the GPU path'
    ]
  },
  {
    name: 'provisioner ClusterAPI: a config kind for a template, and a join Secret beside the template',
    object: pool('capi', {
      cell: {
        provisioner: 'ClusterAPI',
        clusterAPI: {
          clusterName: 'capi',
          bootstrapConfigTemplateRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'join' }
        },
        nodeIPFrom: null
      }
    }),
    messages: [
      'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind "KubeadmConfig" must end in Template',
      'spec.bootstrap.joinSecretRef must not be set with spec.cell.clusterAPI.bootstrapConfigTemplateRef'
    ]
  },
  {
    name: 'HAMi DRA mode with a DeviceClass name that is no DNS subdomain',
    object: pool('hami-dra', { capacity: { hami: { mode: 'DRA', deviceClassName: 'Not_A_Class' } } }),
    messages: ['spec.capacity.hami.deviceClassName is required with mode DRA and must be a DNS subdomain']
  },
  {
    name: 'no join Secret, no guest class, an unknown interface',
    object: pool('missing', { bootstrap: null, cell: { guestTemplate: { guestClassRef: null }, nodeIPFrom: 'eth9' } }),
    messages: [
      'spec.cell.guestTemplate.guestClassRef.name is required',
      'spec.bootstrap.joinSecretRef.name is required',
      'spec.cell.nodeIPFrom eth9 names no interface of spec.cell.guestTemplate.interfaces'
    ]
  },
  {
    name: 'node labels the controller keeps, and a bad taint',
    object: pool('labels', {
      workloadCluster: { node: { labels: { 'cells.kubeswift.io/pool': 'other' }, taints: [{ key: 'bad key', effect: 'NoSchedule' }] } }
    }),
    messages: [
      'spec.workloadCluster.node.labels[cells.kubeswift.io/pool]: cells.kubeswift.io/pool is under cells.kubeswift.io/, which the controller keeps for itself',
      'spec.workloadCluster.node.taints[0].key: bad key is not a valid taint key'
    ]
  },
  {
    name: 'node labels and taints NodeRestriction and the node controllers keep, all at once',
    object: pool('restricted', {
      workloadCluster: {
        node: {
          labels: {
            'node-restriction.kubernetes.io/trusted': 'true',
            'node-role.kubernetes.io/control-plane': '',
            'node-role.kubernetes.io/master': '',
            'kubernetes.io/role': 'master',
            'node-role.kubernetes.io/gpu-cell': ''
          },
          taints: [
            { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' },
            { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' }
          ]
        }
      }
    }),
    messages: [
      'spec.workloadCluster.node.labels[node-restriction.kubernetes.io/trusted]: node-restriction.kubernetes.io/trusted is refused: node-restriction.kubernetes.io/ labels mark the Nodes an admin trusts',
      'spec.workloadCluster.node.labels[node-role.kubernetes.io/control-plane]: node-role.kubernetes.io/control-plane is refused: it marks a control-plane Node',
      'spec.workloadCluster.node.labels[node-role.kubernetes.io/master]: node-role.kubernetes.io/master is refused',
      'spec.workloadCluster.node.labels[kubernetes.io/role]: kubernetes.io/role is refused: its prefix kubernetes.io is reserved to Kubernetes',
      'spec.workloadCluster.node.taints[0].key node.kubernetes.io/out-of-service is refused: node.kubernetes.io/ taints belong to the node lifecycle controller',
      'spec.workloadCluster.node.taints[1].key node.cloudprovider.kubernetes.io/uninitialized is refused'
    ]
  },
  {
    name: 'guestTemplate keys compared as a decoder would and against the fields a cell may set',
    object: pool('spelt', {
      cell: {
        guestTemplate: { KernelRef: { name: 'k' }, SeedProfileRef: { name: 's' }, hostPath: '/etc', interfaces: [{ name: 'routable' }] }
      }
    }),
    messages: [
      'spec.cell.guestTemplate.KernelRef (kernelRef) is not supported on the GPU path',
      'spec.cell.guestTemplate.SeedProfileRef (seedProfileRef) is set by the controller and must not be set here',
      'spec.cell.guestTemplate.hostPath is not a SwiftGuestSpec field a cell may set'
    ]
  },
  {
    name: 'an interface name with a newline',
    object: pool('iface', { cell: { guestTemplate: { interfaces: [{ name: 'eth0\nruncmd: [reboot]' }] }, nodeIPFrom: null } }),
    messages: ['spec.cell.guestTemplate.interfaces[0].name eth0\nruncmd: [reboot] is not a DNS label']
  },
  {
    name: 'node labels and annotations past 16 KiB, and a guestTemplate past 64 KiB',
    object: pool('big', {
      cell: { guestTemplate: { network: { note: 'n'.repeat(65 * 1024) } } },
      workloadCluster: { node: { annotations: { 'example.com/notes': 'n'.repeat(17 * 1024) } } }
    }),
    messages: [
      'spec.workloadCluster.node.labels and .annotations take 17',
      'past the bound of 16384 bytes (16 KiB)',
      'spec.cell.guestTemplate takes 66',
      'past the bound of 65536 bytes (64 KiB)'
    ]
  },
  {
    name: 'a desired size whose CellNodeSet passes 192 KiB',
    object: pool('many', { replicas: 500, workloadCluster: { node: { annotations: { 'example.com/notes': 'n'.repeat(1024) } } } }),
    messages: ["spec.replicas 500: each cell's CellNodeSet entry takes up to", 'past the bound of 196608 bytes (192 KiB)']
  }
]

t.test('the webhook refuses through kubectl apply, every problem named at once', async (t) => {
  for (const c of WEBHOOK_CASES) {
    const { code, stderr } = await attempt(c.object)
    t.equal(code, 1, `${c.name}: kubectl exits 1`)
    t.match(stderr, /admission webhook "gpucellpools\.cells\.kubeswift\.io" denied the request/, `${c.name}: our webhook refused`)
    for (const message of c.messages) t.ok(stderr.includes(message), `${c.name}: ${message}\n  got: ${stderr.trim()}`)
    const name = String(objectAt(c.object, 'metadata').name)
    t.equal((await cluster.kubectl(['get', '-n', NS, 'gpucellpool', name], { allowFail: true })).code, 1, `${c.name}: nothing stored`)
  }
})

t.test('nodeIPFrom is a DNS label in the schema: a newline never reaches the webhook, let alone a boot script', async (t) => {
  const { code, stderr } = await attempt(
    pool('newline', {
      cell: { guestTemplate: { interfaces: [{ name: 'routable' }] }, nodeIPFrom: 'routable\nruncmd: [reboot]' }
    })
  )
  t.equal(code, 1)
  t.match(stderr, /spec\.cell\.nodeIPFrom: Invalid value: "routable\\nruncmd: \[reboot\]": spec\.cell\.nodeIPFrom in body should match/)
  t.notMatch(stderr, /admission webhook/, 'refused by the schema')
})

t.test('an update that breaks a rule is refused; the stored pool stays', async (t) => {
  t.equal((await attempt(pool('updated'))).code, 0)
  const broken = pool('updated', { cell: { guestTemplate: { gpuResourceClaim: { resourceClaimName: 'mine' } } } })
  const { code, stderr } = await attempt(broken)
  t.equal(code, 1)
  t.ok(stderr.includes('spec.cell.guestTemplate.gpuResourceClaim is set by the controller and must not be set here'), stderr)
  t.notOk('gpuResourceClaim' in objectAt((await kube.get(poolRef('updated'))).body, 'spec', 'cell', 'guestTemplate'))
})

t.test('spec.cell.provisioner may not change while the stored status counts cells; with none it may', async (t) => {
  t.equal((await attempt(pool('switched'))).code, 0)
  const current = (await kube.get(poolRef('switched'))).body
  await kube.updateStatus(poolRef('switched'), { ...current, status: { replicas: 2, cells: [] } })
  const capi = pool('switched', {
    cell: {
      provisioner: 'ClusterAPI',
      clusterAPI: { clusterName: 'capi' },
      guestTemplate: { imageRef: { name: 'gpu-noble' }, guestClassRef: { name: 'gpu-worker' } },
      nodeIPFrom: null
    }
  })
  const refused = await attempt(capi)
  t.equal(refused.code, 1)
  t.match(refused.stderr, /admission webhook "gpucellpools\.cells\.kubeswift\.io" denied the request/)
  t.ok(
    refused.stderr.includes(
      'spec.cell.provisioner: may not change from SwiftGuest to ClusterAPI while the pool has cells (2 in its status)'
    ),
    refused.stderr
  )
  t.equal(objectAt((await kube.get(poolRef('switched'))).body, 'spec', 'cell').provisioner, 'SwiftGuest', 'the stored pool stays')
  const again = (await kube.get(poolRef('switched'))).body
  await kube.updateStatus(poolRef('switched'), { ...again, status: { replicas: 0, cells: [] } })
  const admitted = await attempt(capi)
  t.equal(admitted.code, 0, `with no cell the change is admitted: ${admitted.stderr}`)
  t.equal(objectAt((await kube.get(poolRef('switched'))).body, 'spec', 'cell').provisioner, 'ClusterAPI')
})

t.test('the cell pool examples apply', async (t) => {
  for (const file of ['cellpool.yaml', 'cellpool-autoscaling.yaml']) {
    const path = join(ROOT, 'deploy', 'examples', file)
    await cluster.kubectl(['create', 'namespace', 'gpu-workspaces'], { allowFail: true })
    const { code, stdout, stderr } = await cluster.kubectl(['apply', '--validate=strict', '-f', path], { allowFail: true })
    t.equal(code, 0, `${file}: ${stdout} ${stderr}`)
    t.notMatch(stderr, /Warning/, `${file}: no warnings`)
  }
})

// ---------------------------------------------------------------------------------------------
// What the builders render is accepted as it is: by the CellNodeSet CRD (strict), and by the
// KubeSwift stand-ins (open schemas, so this checks names, kinds and namespaces).

const resolved = resolvePool(
  spec({ workloadCluster: { node: { taints: [{ key: 'example.com/cell', value: 'true', effect: 'NoSchedule' }] } } })
)
const ID = { poolName: 'built', namespace: NS, poolUID: 'built-uid', index: 0 }

t.test('the children the builders render are created as they are', async (t) => {
  const children: JsonObject[] = [
    buildBootstrapSecret(ID, '#cloud-config\n') as unknown as JsonObject,
    buildSeedProfile(ID, resolved.hostname) as unknown as JsonObject,
    buildGuest(resolved, ID) as unknown as JsonObject,
    buildCellNodeSet('built', NS, 'built-uid', resolved, [buildCellNode(resolved, ID, 'guest-uid', false)], true) as unknown as JsonObject
  ]
  for (const child of children) {
    const { code, stderr } = await cluster.kubectl(['create', '--validate=strict', '-f', '-'], {
      input: JSON.stringify(child),
      allowFail: true
    })
    t.equal(code, 0, `${String(child.kind)}: ${stderr}`)
    const info = await kube.resourceInfo(String(child.apiVersion), String(child.kind))
    const stored = (
      await kube.get({
        apiVersion: String(child.apiVersion),
        resource: info.resource,
        namespace: NS,
        name: String(objectAt(child, 'metadata').name)
      })
    ).body
    const { metadata, ...fields } = child
    t.hasStrict(stored, fields, `${String(child.kind)}: stored as built`)
    t.hasStrict(objectAt(stored, 'metadata').labels, objectAt(metadata, 'labels'), `${String(child.kind)}: labels`)
  }
  const guest: ResourceRef = { apiVersion: 'swift.kubeswift.io/v1alpha1', resource: 'swiftguests', namespace: NS, name: 'built-0' }
  const current = (await kube.get(guest)).body
  const status: JsonObject = {
    phase: 'Running',
    nodeName: 'gpu-host-1',
    gpu: { devices: ['0000:41:00.0'], nodeName: 'gpu-host-1' },
    network: { primaryIP: '10.0.2.15', interfaces: [{ name: 'routable', ip: '10.20.0.11' }] },
    conditions: [{ type: 'Ready', status: 'True', reason: 'Running', message: '', lastTransitionTime: '2026-01-02T03:04:05Z' }]
  }
  await kube.updateStatus(guest, { ...current, status })
  t.same((await kube.get(guest)).body.status, status, 'a guest status can be stamped as KubeSwift writes it')
})

t.test("the size bounds hold what the API server stores with Metacontroller's record, and no more", async (t) => {
  // Metacontroller creates a child with its last-applied record in an annotation; an object takes 256 KiB of them.
  const withRecord = (child: KubeObject): JsonObject =>
    ({
      ...child,
      metadata: { ...child.metadata, annotations: { ...child.metadata.annotations, [LAST_APPLIED_ANNOTATION]: JSON.stringify(child) } }
    }) as unknown as JsonObject
  const create = (object: JsonObject) => cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(object), allowFail: true })
  const at = (index: number): CellIdentity => ({ ...ID, index })

  const atBound = await create(withRecord(buildBootstrapSecret(at(10), '#'.repeat(MAX_BOOTSTRAP_BYTES))))
  t.equal(atBound.code, 0, `a bootstrap Secret of 64 KiB is stored with its record: ${atBound.stderr}`)
  const past = await create(withRecord(buildBootstrapSecret(at(11), '#'.repeat(100 * 1024))))
  t.equal(past.code, 1, 'one of 100 KiB is not')
  t.match(past.stderr, /metadata\.annotations: Too long: may not be (more|longer) than 262144 bytes|must have at most 262144 bytes/)

  const cells = Math.floor((MAX_NODE_SET_BYTES - nodeSetBytes('built', resolved, 0).total) / nodeSetEntryBytes('built', resolved))
  const nodes = Array.from({ length: cells }, (_, i) =>
    buildCellNode(resolved, at(99999 - i), '00000000-0000-4000-8000-000000000001', false)
  )
  const largest = buildCellNodeSet('largest', NS, 'built-uid', resolved, nodes, true)
  t.ok(Buffer.byteLength(JSON.stringify(largest)) <= MAX_NODE_SET_BYTES, `${cells} entries stay within the bound`)
  const stored = await create(withRecord(largest))
  t.equal(stored.code, 0, `a CellNodeSet at the 240 KiB bound is stored with its record: ${stored.stderr}`)
})

// ---------------------------------------------------------------------------------------------

t.test("only Metacontroller's service account writes a CellNodeSet's spec", async (t) => {
  await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'cellnodeset-policy.yaml')])
  await cluster.kubectl([
    'create',
    'clusterrolebinding',
    'metacontroller-test',
    '--clusterrole=cluster-admin',
    `--serviceaccount=metacontroller:metacontroller`
  ])
  const set = (name: string, poolUID: string): JsonObject => ({
    apiVersion: CELLS,
    kind: 'CellNodeSet',
    metadata: { name, namespace: NS },
    spec: { kubeconfigSecretRef: { name: 'kubeconfig', key: 'value' }, poolUID }
  })
  const create = (object: JsonObject, as?: string) =>
    cluster.kubectl(['create', ...(as === undefined ? [] : [`--as=${as}`]), '-f', '-'], { input: JSON.stringify(object), allowFail: true })
  // A new policy takes a moment to reach the admission chain: probe with a server-side dry run.
  const denial = await eventually('the policy to refuse an admin create', async () => {
    const probe = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify(set('probe', 'u')),
      allowFail: true
    })
    return probe.code === 1 ? probe.stderr : undefined
  })
  t.match(denial, /only system:serviceaccount:metacontroller:metacontroller \(Metacontroller\) may write the spec of a CellNodeSet/)

  t.equal((await create(set('guarded', 'uid-a'))).code, 1, 'an admin cannot create one')
  const made = await create(set('guarded', 'uid-a'), METACONTROLLER)
  t.equal(made.code, 0, `Metacontroller can: ${made.stderr}`)
  const ref: ResourceRef = { apiVersion: CELLS, resource: 'cellnodesets', namespace: NS, name: 'guarded' }

  const label = await cluster.kubectl(['label', '-n', NS, 'cellnodeset', 'guarded', 'team=ml'], { allowFail: true })
  t.equal(label.code, 0, `a metadata change by anyone passes: ${label.stderr}`)
  const finalizer = await cluster.kubectl(
    [
      'patch',
      '-n',
      NS,
      'cellnodeset',
      'guarded',
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":["cells.kubeswift.io/workload-nodes"]}}'
    ],
    { allowFail: true }
  )
  t.equal(finalizer.code, 0, `the agent's finalizer passes: ${finalizer.stderr}`)
  const status = await cluster.kubectl(
    ['patch', '-n', NS, 'cellnodeset', 'guarded', '--subresource=status', '--type=merge', '-p', '{"status":{"nodeCount":1}}'],
    { allowFail: true }
  )
  t.equal(status.code, 0, `a status write passes: ${status.stderr}`)

  const spec = await cluster.kubectl(['patch', '-n', NS, 'cellnodeset', 'guarded', '--type=merge', '-p', '{"spec":{"poolUID":"uid-b"}}'], {
    allowFail: true
  })
  t.equal(spec.code, 1, 'an admin cannot change the spec')
  t.match(spec.stderr, /may write the spec of a CellNodeSet/)
  t.equal(objectAt((await kube.get(ref)).body, 'spec').poolUID, 'uid-a')
  const asMetacontroller = await cluster.kubectl(
    ['patch', `--as=${METACONTROLLER}`, '-n', NS, 'cellnodeset', 'guarded', '--type=merge', '-p', '{"spec":{"poolUID":"uid-b"}}'],
    { allowFail: true }
  )
  t.equal(asMetacontroller.code, 0, `Metacontroller can: ${asMetacontroller.stderr}`)
  t.equal(objectAt((await kube.get(ref)).body, 'spec').poolUID, 'uid-b')
  await cluster.kubectl(['patch', '-n', NS, 'cellnodeset', 'guarded', '--type=merge', '-p', '{"metadata":{"finalizers":null}}'])
  t.equal((await cluster.kubectl(['delete', '-n', NS, 'cellnodeset', 'guarded'], { allowFail: true })).code, 0, 'a delete passes')
})
