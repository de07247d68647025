import t from 'tap'
import fc from 'fast-check'
import { parseDuration } from '../../hooks/api/duration.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { poolNameProblems, poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { kubeletMaySetLabel } from '../../hooks/k8s/node-keys.ts'
import { poolSpec } from './fixtures/cellpool.ts'
import type { ResolvedPool } from '../../hooks/cellpool/model/resolved-pool.ts'

/** The fixture's valid pool spec with node annotations and a taint; each case below changes one thing. */
function base(): Record<string, unknown> {
  return poolSpec({
    workloadCluster: {
      kubeconfigSecretRef: { name: 'kc' },
      node: {
        labels: { gpu: 'on', 'node-role.kubernetes.io/gpu-cell': '' },
        annotations: { 'example.com/owner': 'ml-team' },
        taints: [{ key: 'example.com/gpu-cell', value: 'true', effect: 'NoSchedule' }]
      }
    }
  })
}

/** The base with `change` applied. */
function variant(change: (spec: any) => void): Record<string, unknown> {
  const spec = base()
  change(spec)
  return spec
}

t.test('the base spec has no problem', async (t) => {
  t.same(poolProblems('inference', base()), [])
})

interface Case {
  rule: string
  spec: Record<string, unknown>
  field: string
  message: RegExp
}

const gt = 'spec.cell.guestTemplate'
const CASES: Case[] = [
  ...(['seedProfileRef', 'gpuProfileRef', 'gpuResourceClaim', 'nodeName', 'migration', 'runPolicy'] as const).map((field) => ({
    rule: `guestTemplate.${field} is the controller's`,
    spec: variant((s) => {
      s.cell.guestTemplate[field] = field === 'nodeName' || field === 'runPolicy' ? 'x' : { name: 'x' }
    }),
    field: `${gt}.${field}`,
    message: new RegExp(`^${gt.replace(/\./g, '\\.')}\\.${field} is set by the controller and must not be set here$`)
  })),
  {
    rule: 'kernelRef is not supported',
    spec: variant((s) => {
      s.cell.guestTemplate.kernelRef = { name: 'k' }
    }),
    field: `${gt}.kernelRef`,
    message: /not supported on the GPU path: a GPU cell boots from a disk/
  },
  {
    rule: 'cloneFromSnapshot is not supported',
    spec: variant((s) => {
      s.cell.guestTemplate.cloneFromSnapshot = { snapshotRef: { name: 's' } }
    }),
    field: `${gt}.cloneFromSnapshot`,
    message: /VFIO device state cannot be restored/
  },
  {
    rule: 'vhostUserDevices is not supported',
    spec: variant((s) => {
      s.cell.guestTemplate.vhostUserDevices = [{ name: 'v' }]
    }),
    field: `${gt}.vhostUserDevices`,
    message: /not supported on the GPU path/
  },
  {
    rule: 'filesystems is not supported',
    spec: variant((s) => {
      s.cell.guestTemplate.filesystems = [{ name: 'f' }]
    }),
    field: `${gt}.filesystems`,
    message: /not supported on the GPU path/
  },
  {
    rule: 'osType windows is not supported',
    spec: variant((s) => {
      s.cell.guestTemplate.osType = 'windows'
    }),
    field: `${gt}.osType`,
    message: /osType windows is not supported on the GPU path/
  },
  ...(
    [
      ['KernelRef', /KernelRef \(kernelRef\) is not supported on the GPU path: a GPU cell boots from a disk/],
      ['kernelref', /kernelref \(kernelRef\) is not supported on the GPU path/],
      ['SeedProfileRef', /SeedProfileRef \(seedProfileRef\) is set by the controller and must not be set here$/],
      ['kernelCmdline', /kernelCmdline is not supported on the GPU path: it belongs to a kernel boot/],
      ['ImageRef', /ImageRef is not a SwiftGuestSpec field: field names are case-sensitive; write imageRef$/],
      ['hostPath', /hostPath is not a SwiftGuestSpec field a cell may set; a cell may set imageRef, guestClassRef, dataDiskRef/]
    ] as const
  ).map(([key, message]) => ({
    rule: `guestTemplate key ${key} is refused`,
    spec: variant((s) => {
      s.cell.guestTemplate[key] = { name: 'x' }
    }),
    field: `${gt}.${key}`,
    message
  })),
  {
    rule: 'osType is linux',
    spec: variant((s) => {
      s.cell.guestTemplate.osType = 'freebsd'
    }),
    field: `${gt}.osType`,
    message: /osType freebsd is not linux, the only OS family a cell runs/
  },
  {
    rule: 'osType Windows in any case is refused as windows',
    spec: variant((s) => {
      s.cell.guestTemplate.osType = 'Windows'
    }),
    field: `${gt}.osType`,
    message: /osType windows is not supported on the GPU path/
  },
  {
    rule: 'the guestTemplate within 64 KiB',
    spec: variant((s) => {
      s.cell.guestTemplate.network = { note: 'x'.repeat(64 * 1024) }
    }),
    field: gt,
    message: /guestTemplate takes 65\d{3} bytes as JSON, past the bound of 65536 bytes \(64 KiB\): every cell's SwiftGuest carries a copy/
  },
  {
    rule: 'guestClassRef is required',
    spec: variant((s) => {
      delete s.cell.guestTemplate.guestClassRef
    }),
    field: `${gt}.guestClassRef.name`,
    message: /guestClassRef\.name is required/
  },
  {
    rule: 'imageRef is required',
    spec: variant((s) => {
      s.cell.guestTemplate.imageRef = { name: '' }
    }),
    field: `${gt}.imageRef.name`,
    message: /imageRef\.name is required/
  },
  {
    rule: 'gpu.count must be 1',
    spec: variant((s) => {
      s.cell.gpu.count = 2
    }),
    field: 'spec.cell.gpu.count',
    message: /count 2 is not supported: a cell holds exactly 1 whole GPU/
  },
  {
    rule: 'DRA needs dra',
    spec: variant((s) => {
      delete s.cell.gpu.dra
    }),
    field: 'spec.cell.gpu.dra',
    message: /dra is required with backend DRA/
  },
  {
    rule: 'DRA takes no native',
    spec: variant((s) => {
      s.cell.gpu.native = { gpuProfileRef: { name: 'p' } }
    }),
    field: 'spec.cell.gpu.native',
    message: /native must not be set with backend DRA/
  },
  {
    rule: 'DRA needs one claim name, not both',
    spec: variant((s) => {
      s.cell.gpu.dra.resourceClaimName = 'shared'
      s.replicas = 1
    }),
    field: 'spec.cell.gpu.dra',
    message: /exactly one of resourceClaimTemplateName and resourceClaimName/
  },
  {
    rule: 'DRA needs one claim name, not none',
    spec: variant((s) => {
      s.cell.gpu.dra = { requestName: 'gpu' }
    }),
    field: 'spec.cell.gpu.dra',
    message: /exactly one of/
  },
  {
    rule: 'a shared claim only for one replica',
    spec: variant((s) => {
      s.cell.gpu.dra = { resourceClaimName: 'shared' }
    }),
    field: 'spec.cell.gpu.dra.resourceClaimName',
    message: /only for a pool of at most one cell \(replicas 2\)/
  },
  {
    rule: 'a shared claim only when autoscaling cannot grow past one',
    spec: variant((s) => {
      s.replicas = 1
      s.cell.gpu.dra = { resourceClaimName: 'shared' }
      s.autoscaling = { enabled: true, maxReplicas: 3 }
    }),
    field: 'spec.cell.gpu.dra.resourceClaimName',
    message: /autoscaling\.maxReplicas 3/
  },
  {
    rule: 'tier is pcie',
    spec: variant((s) => {
      s.cell.gpu.dra.tier = 'hgx-full'
    }),
    field: 'spec.cell.gpu.dra.tier',
    message: /tier hgx-full is not supported: a cell takes the pcie tier/
  },
  {
    rule: 'Native needs native.gpuProfileRef',
    spec: variant((s) => {
      s.cell.gpu = { backend: 'Native' }
    }),
    field: 'spec.cell.gpu.native.gpuProfileRef.name',
    message: /required with backend Native/
  },
  {
    rule: 'Native takes no dra',
    spec: variant((s) => {
      s.cell.gpu.backend = 'Native'
      s.cell.gpu.native = { gpuProfileRef: { name: 'a100' } }
    }),
    field: 'spec.cell.gpu.dra',
    message: /dra must not be set with backend Native/
  },
  {
    rule: 'joinSecretRef is required',
    spec: variant((s) => {
      delete s.bootstrap
    }),
    field: 'spec.bootstrap.joinSecretRef.name',
    message: /joinSecretRef\.name is required: a cell without a join template never joins/
  },
  {
    rule: 'nodeIPFrom names an interface',
    spec: variant((s) => {
      s.cell.nodeIPFrom = 'eth9'
    }),
    field: 'spec.cell.nodeIPFrom',
    message: /eth9 names no interface of spec\.cell\.guestTemplate\.interfaces \(it lists primary, routable\)/
  },
  {
    rule: 'nodeIPFrom is a DNS label: no newline reaches the boot script',
    spec: variant((s) => {
      s.cell.nodeIPFrom = 'routable\nruncmd: [reboot]'
      s.cell.guestTemplate.interfaces.push({ name: 'routable\nruncmd: [reboot]' })
    }),
    field: 'spec.cell.nodeIPFrom',
    message:
      /nodeIPFrom routable\nruncmd: \[reboot\] is not a DNS label \(at most 63 lower-case letters.*it goes into the boot script as \{\{ nodeIPInterface \}\}$/
  },
  {
    rule: 'an interface name is a DNS label',
    spec: variant((s) => {
      s.cell.guestTemplate.interfaces[0].name = 'Eth_0'
    }),
    field: `${gt}.interfaces[0].name`,
    message: /interfaces\[0\]\.name Eth_0 is not a DNS label/
  },
  {
    rule: 'nodeIPFrom with no interfaces',
    spec: variant((s) => {
      delete s.cell.guestTemplate.interfaces
    }),
    field: 'spec.cell.nodeIPFrom',
    message: /\(it lists none\)/
  },
  ...(['labels', 'annotations'] as const).flatMap((map) => {
    const what = map === 'labels' ? 'label' : 'annotation'
    const bad = map === 'labels' ? 'has space' : 'a/b/c'
    const reserved = map === 'labels' ? 'cells.kubeswift.io/pool' : 'cells.kubeswift.io/managed'
    return [
      {
        rule: `a node ${what} key must be a qualified name`,
        spec: variant((s) => {
          s.workloadCluster.node[map][bad] = 'x'
        }),
        field: `spec.workloadCluster.node.${map}[${bad}]`,
        message: new RegExp(`is not a valid ${what} key`)
      },
      {
        rule: `cells.kubeswift.io/ node ${map} are the controller's`,
        spec: variant((s) => {
          s.workloadCluster.node[map][reserved] = 'other'
        }),
        field: `spec.workloadCluster.node.${map}[${reserved}]`,
        message: /is under cells\.kubeswift\.io\/, which the controller keeps for itself/
      }
    ]
  }),
  {
    rule: 'a label value must be a label value',
    spec: variant((s) => {
      s.workloadCluster.node.labels.gpu = 'on!'
    }),
    field: 'spec.workloadCluster.node.labels[gpu]',
    message: /value on! is not a label value/
  },
  {
    rule: 'a label value of 64 characters',
    spec: variant((s) => {
      s.workloadCluster.node.labels.gpu = 'a'.repeat(64)
    }),
    field: 'spec.workloadCluster.node.labels[gpu]',
    message: /is not a label value/
  },
  {
    rule: 'at most 64 node labels',
    spec: variant((s) => {
      for (let i = 0; i < 63; i++) s.workloadCluster.node.labels[`example.com/l${i}`] = 'x'
    }),
    field: 'spec.workloadCluster.node.labels',
    message: /^spec\.workloadCluster\.node\.labels has 65 entries; at most 64$/
  },
  {
    rule: 'node labels and annotations within 16 KiB together',
    spec: variant((s) => {
      s.workloadCluster.node.annotations.big = 'x'.repeat(16 * 1024)
    }),
    field: 'spec.workloadCluster.node',
    message: /labels and \.annotations take 16\d{3} bytes of keys and values, past the bound of 16384 bytes \(16 KiB\)/
  },
  ...(
    [
      ['node-restriction.kubernetes.io/trusted', /mark the Nodes an admin trusts; NodeRestriction forbids a kubelet to set them/],
      ['tier.node-restriction.kubernetes.io/gold', /mark the Nodes an admin trusts/],
      ['node-role.kubernetes.io/control-plane', /it marks a control-plane Node/],
      ['node-role.kubernetes.io/master', /it marks a control-plane Node/],
      ['node-role.kubernetes.io/controlplane', /it marks a control-plane Node/],
      ['node-role.kubernetes.io/etcd', /an etcd Node/],
      ['kubernetes.io/role', /its prefix kubernetes\.io is reserved to Kubernetes and NodeRestriction forbids a kubelet to set it/],
      ['storage.k8s.io/zone', /its prefix storage\.k8s\.io is reserved to Kubernetes/]
    ] as const
  ).map(([key, message]) => ({
    rule: `node label ${key} is refused`,
    spec: variant((s) => {
      s.workloadCluster.node.labels[key] = 'true'
    }),
    field: `spec.workloadCluster.node.labels[${key}]`,
    message: new RegExp(`${key.replace(/\./g, '\\.')} is refused: .*${message.source}`)
  })),
  ...(
    [
      ['node.kubernetes.io/out-of-service', /node\.kubernetes\.io\/ taints belong to the node lifecycle controller and the kubelet/],
      ['node.kubernetes.io/unreachable', /node\.kubernetes\.io\/ taints belong to the node lifecycle controller/],
      ['node.cloudprovider.kubernetes.io/uninitialized', /belong to the cloud node controller/],
      ['node-role.kubernetes.io/control-plane', /it is the control-plane taint/],
      ['node-role.kubernetes.io/controlplane', /it is the control-plane taint/],
      ['node-role.kubernetes.io/etcd', /RKE's etcd taint/]
    ] as const
  ).map(([key, message]) => ({
    rule: `taint ${key} is refused`,
    spec: variant((s) => {
      s.workloadCluster.node.taints = [{ key, effect: 'NoExecute' }]
    }),
    field: 'spec.workloadCluster.node.taints[0].key',
    message: new RegExp(`taints\\[0\\]\\.key ${key.replace(/\./g, '\\.')} is refused: .*${message.source}`)
  })),
  {
    rule: 'a taint key must be a qualified name',
    spec: variant((s) => {
      s.workloadCluster.node.taints[0].key = 'bad key'
    }),
    field: 'spec.workloadCluster.node.taints[0].key',
    message: /is not a valid taint key/
  },
  {
    rule: 'a taint value must be a label value',
    spec: variant((s) => {
      s.workloadCluster.node.taints[0].value = 'a b'
    }),
    field: 'spec.workloadCluster.node.taints[0].value',
    message: /is not a valid taint value/
  },
  {
    rule: 'a taint effect from the enum',
    spec: variant((s) => {
      s.workloadCluster.node.taints[0].effect = 'NoWay'
    }),
    field: 'spec.workloadCluster.node.taints[0].effect',
    message: /NoWay is not one of NoSchedule, PreferNoSchedule, NoExecute/
  },
  {
    rule: 'one taint per key and effect',
    spec: variant((s) => {
      s.workloadCluster.node.taints.push({ key: 'example.com/gpu-cell', value: 'false', effect: 'NoSchedule' })
    }),
    field: 'spec.workloadCluster.node.taints[1]',
    message: /repeats key example\.com\/gpu-cell with effect NoSchedule/
  },
  {
    rule: 'kubeconfigSecretRef is required',
    spec: variant((s) => {
      s.workloadCluster.kubeconfigSecretRef = {}
    }),
    field: 'spec.workloadCluster.kubeconfigSecretRef.name',
    message: /kubeconfigSecretRef\.name is required/
  },
  {
    rule: 'workloadCluster is required',
    spec: variant((s) => {
      delete s.workloadCluster
    }),
    field: 'spec.workloadCluster',
    message: /^spec\.workloadCluster is required$/
  },
  {
    rule: 'a join Secret name is a DNS subdomain',
    spec: variant((s) => {
      s.bootstrap.joinSecretRef.name = 'Join_Secret'
    }),
    field: 'spec.bootstrap.joinSecretRef.name',
    message: /is not a Secret name/
  },
  {
    rule: 'a join Secret key is a Secret key',
    spec: variant((s) => {
      s.bootstrap.joinSecretKey = 'user data'
    }),
    field: 'spec.bootstrap.joinSecretKey',
    message: /is not a Secret key/
  },
  {
    rule: 'maxReplicas is required when enabled',
    spec: variant((s) => {
      s.autoscaling = { enabled: true }
    }),
    field: 'spec.autoscaling.maxReplicas',
    message: /maxReplicas is required when autoscaling is enabled/
  },
  {
    rule: 'minReplicas <= maxReplicas',
    spec: variant((s) => {
      s.autoscaling = { enabled: true, minReplicas: 4, maxReplicas: 3 }
    }),
    field: 'spec.autoscaling.minReplicas',
    message: /minReplicas 4 exceeds maxReplicas 3/
  },
  {
    rule: 'scaleDown Auto needs minReplicas',
    spec: variant((s) => {
      s.autoscaling = { enabled: true, maxReplicas: 3, scaleDown: 'Auto' }
    }),
    field: 'spec.autoscaling.minReplicas',
    message: /minReplicas is required with scaleDown Auto/
  },
  {
    rule: 'stabilizationWindow is a duration',
    spec: variant((s) => {
      s.autoscaling = { stabilizationWindow: '10 minutes' }
    }),
    field: 'spec.autoscaling.stabilizationWindow',
    message: /10 minutes is not a duration/
  },
  {
    rule: 'scaleDownStabilizationWindow is a duration',
    spec: variant((s) => {
      s.autoscaling = { scaleDownStabilizationWindow: '-5m' }
    }),
    field: 'spec.autoscaling.scaleDownStabilizationWindow',
    message: /-5m is not a duration/
  },
  {
    rule: 'bootstrap.readyTimeout is a duration',
    spec: variant((s) => {
      s.bootstrap.readyTimeout = '15'
    }),
    field: 'spec.bootstrap.readyTimeout',
    message: /15 is not a duration/
  },
  {
    rule: 'bootstrap.readyTimeout is longer than 0',
    spec: variant((s) => {
      s.bootstrap.readyTimeout = '0s'
    }),
    field: 'spec.bootstrap.readyTimeout',
    message: /must be longer than 0/
  },
  {
    rule: 'capacity.readyTimeout is a duration',
    spec: variant((s) => {
      s.capacity = { readyTimeout: '5 m' }
    }),
    field: 'spec.capacity.readyTimeout',
    message: /is not a duration/
  },
  {
    rule: 'deletion.drainTimeout is a duration',
    spec: variant((s) => {
      s.deletion = { drainTimeout: 'forever' }
    }),
    field: 'spec.deletion.drainTimeout',
    message: /forever is not a duration/
  },
  {
    rule: 'provisioner ClusterAPI needs cell.clusterAPI',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
    }),
    field: 'spec.cell.clusterAPI',
    message: /^spec\.cell\.clusterAPI is required with provisioner ClusterAPI/
  },
  {
    rule: 'provisioner ClusterAPI needs clusterName',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
      s.cell.clusterAPI = {}
    }),
    field: 'spec.cell.clusterAPI.clusterName',
    message: /clusterName is required/
  },
  {
    rule: 'under provisioner ClusterAPI the guestTemplate carries only imageRef, guestClassRef and interfaces',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
      s.cell.clusterAPI = { clusterName: 'capi' }
      s.cell.guestTemplate.dataDiskRef = { name: 'scratch' }
    }),
    field: 'spec.cell.guestTemplate.dataDiskRef',
    message: /forbidden with provisioner ClusterAPI: a KubeSwiftMachine takes only imageRef, guestClassRef and interfaces/
  },
  {
    rule: 'a bootstrap config template kind ends in Template',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
      s.cell.clusterAPI = {
        clusterName: 'capi',
        bootstrapConfigTemplateRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'join' }
      }
      delete s.bootstrap
    }),
    field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind',
    message: /"KubeadmConfig" must end in Template/
  },
  {
    rule: 'a join Secret is refused beside a bootstrap config template',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
      s.cell.clusterAPI = {
        clusterName: 'capi',
        bootstrapConfigTemplateRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'join' }
      }
    }),
    field: 'spec.bootstrap.joinSecretRef',
    message: /must not be set with spec\.cell\.clusterAPI\.bootstrapConfigTemplateRef/
  },
  {
    rule: 'a Cluster API pool without a template needs the join Secret',
    spec: variant((s) => {
      s.cell.provisioner = 'ClusterAPI'
      s.cell.clusterAPI = { clusterName: 'capi' }
      delete s.bootstrap
    }),
    field: 'spec.bootstrap.joinSecretRef.name',
    message: /is required: a cell without a join template never joins/
  },
  {
    rule: 'hami mode DRA needs a DeviceClass name',
    spec: variant((s) => {
      s.capacity = { hami: { mode: 'DRA', deviceClassName: 'Not_A_Name' } }
    }),
    field: 'spec.capacity.hami.deviceClassName',
    message: /is required with mode DRA and must be a DNS subdomain/
  },
  {
    rule: 'at most 100000 cells, so cell indices keep to five digits',
    spec: variant((s) => {
      s.replicas = 100001
    }),
    field: 'spec.replicas',
    message: /100001 is above the maximum 100000/
  },
  {
    rule: 'the desired size fits one CellNodeSet: spec.replicas times an entry within 192 KiB',
    spec: variant((s) => {
      s.replicas = 5000
    }),
    field: 'spec.replicas',
    message:
      /^spec\.replicas 5000: each cell's CellNodeSet entry takes up to \d+ bytes .* past the bound of 196608 bytes \(192 KiB\) .*; at most \d+ cells with these node labels, annotations and taints$/
  },
  {
    rule: 'with autoscaling, maxReplicas times an entry within 192 KiB',
    spec: variant((s) => {
      s.replicas = 1
      s.autoscaling = { enabled: true, maxReplicas: 20000 }
    }),
    field: 'spec.autoscaling.maxReplicas',
    message: /^spec\.autoscaling\.maxReplicas 20000: each cell's CellNodeSet entry/
  },
  {
    rule: 'replicas is a non-negative integer',
    spec: variant((s) => {
      s.replicas = -1
    }),
    field: 'spec.replicas',
    message: /-1 is below the minimum 0/
  },
  {
    rule: 'an enum field outside its enum',
    spec: variant((s) => {
      s.updatePolicy = { type: 'Sometimes' }
    }),
    field: 'spec.updatePolicy.type',
    message: /Sometimes is not one of Manual, RollingUpdate/
  },
  {
    rule: 'a field of the wrong type',
    spec: variant((s) => {
      s.autoscaling = { enabled: 'yes' }
    }),
    field: 'spec.autoscaling.enabled',
    message: /yes must be a boolean/
  }
]

t.test('each admission rule refuses its case, naming the field and the reason', async (t) => {
  for (const c of CASES) {
    const problems = poolProblems('inference', c.spec)
    const at = problems.filter((p) => p.field === c.field)
    t.equal(at.length, 1, `${c.rule}: one problem at ${c.field}`, { problems })
    t.match(at[0]?.message ?? '', c.message, `${c.rule}: the message`)
    t.ok(
      problems.every((p) => p.message.length > 0 && p.field.startsWith('spec')),
      `${c.rule}: every problem names a spec field`
    )
  }
})

t.test('all problems are reported at once', async (t) => {
  const spec = variant((s) => {
    s.cell.guestTemplate.runPolicy = 'Always'
    s.cell.guestTemplate.kernelRef = { name: 'k' }
    s.cell.provisioner = 'ClusterAPI'
    s.cell.clusterAPI = { clusterName: 'Capi' }
    s.cell.nodeIPFrom = 'eth9'
    delete s.bootstrap
    s.autoscaling = { enabled: true, stabilizationWindow: 'soon' }
  })
  t.same(
    poolProblems('Pool', spec).map((p) => p.field),
    [
      'metadata.name',
      `${gt}.runPolicy`,
      `${gt}.kernelRef`,
      'spec.cell.clusterAPI.clusterName',
      'spec.cell.nodeIPFrom',
      'spec.bootstrap.joinSecretRef.name',
      'spec.autoscaling.maxReplicas',
      'spec.autoscaling.stabilizationWindow'
    ]
  )
})

t.test('the pool name leaves room for - and five digits within 63 characters', async (t) => {
  t.same(poolNameProblems('a'.repeat(57)), [])
  t.same(poolNameProblems('0-pool'), [])
  for (const bad of ['a'.repeat(58), 'Pool', 'pool.a', '-pool', 'pool-', '']) {
    const problems = poolNameProblems(bad)
    t.equal(problems.length, 1, JSON.stringify(bad))
    t.equal(problems[0]?.field, 'metadata.name')
    t.match(problems[0]?.message, /at most 57 characters, so that cell names <pool>-<index> stay 63-character Node names/)
  }
})

t.test('a field set to null in the guestTemplate counts as unset', async (t) => {
  t.same(
    poolProblems(
      'inference',
      variant((s) => {
        s.cell.guestTemplate.seedProfileRef = null
      })
    ),
    []
  )
})

t.test('a spec of any shape gives problems, never an exception', async (t) => {
  const odd: unknown[] = [
    null,
    7,
    'spec',
    [],
    {},
    { cell: 'x' },
    { cell: { guestTemplate: [], gpu: 'x' } },
    { cell: { guestTemplate: { interfaces: 'x' }, gpu: { dra: [] } } },
    { workloadCluster: { node: { labels: [], annotations: 'x', taints: {} } } },
    { workloadCluster: { node: { taints: [null, 1, 'x', { key: 5 }] } } },
    JSON.parse('{"__proto__": {"polluted": true}, "cell": {"guestTemplate": {"__proto__": {"x": 1}}}}'),
    JSON.parse('{"workloadCluster": {"kubeconfigSecretRef": {"name": "k"}, "node": {"labels": {"__proto__": "x", "constructor": "y"}}}}'),
    { autoscaling: { enabled: true, minReplicas: 'a', maxReplicas: {} }, deletion: { drainTimeout: 5 } }
  ]
  for (const spec of odd) {
    const problems = poolProblems('pool', spec)
    t.ok(problems.length > 0, `${JSON.stringify(spec)}: problems`)
    t.ok(problems.every((p) => typeof p.field === 'string' && typeof p.message === 'string'))
    t.doesNotThrow(() => resolvePool(spec))
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was touched')
})

t.test('NodeRestriction: which labels a kubelet may set on itself', async (t) => {
  // [key, a kubelet may set it], grouped by the rule that decides; near misses beside the keys they resemble.
  const cases: Array<[string, boolean]> = [
    // Outside kubernetes.io and k8s.io (a domain that only ends alike is outside too).
    ['gpu', true],
    ['example.com/team', true],
    ['cells.kubeswift.io/pool-uid', true],
    ['notkubernetes.io/x', true],
    ['k8s.io.example.com/x', true],
    ['k8s.io/x', false],
    ['sub.k8s.io/x', false],
    ['example.kubernetes.io/x', false],
    // The well-known labels a kubelet sets on itself.
    ['kubernetes.io/hostname', true],
    ['kubernetes.io/os', true],
    ['kubernetes.io/arch', true],
    ['kubernetes.io/role', false],
    ['kubernetes.io/instance-type', false],
    ['node.kubernetes.io/instance-type', true],
    ['beta.kubernetes.io/instance-type', true],
    ['beta.kubernetes.io/os', true],
    ['beta.kubernetes.io/arch', true],
    ['topology.kubernetes.io/zone', true],
    ['topology.kubernetes.io/region', true],
    ['topology.kubernetes.io/rack', false],
    ['failure-domain.beta.kubernetes.io/zone', true],
    ['failure-domain.beta.kubernetes.io/region', true],
    // Anything under [*.]kubelet.kubernetes.io/ and [*.]node.kubernetes.io/, nothing under node-role or node-restriction.
    ['kubelet.kubernetes.io/anything', true],
    ['x.kubelet.kubernetes.io/anything', true],
    ['node.kubernetes.io/gpu', true],
    ['cell.node.kubernetes.io/gpu', true],
    ['node-role.kubernetes.io/gpu-cell', false],
    ['node-restriction.kubernetes.io/x', false]
  ]
  for (const [key, maySet] of cases) t.equal(kubeletMaySetLabel(key), maySet, `${key}: ${maySet ? 'self-settable' : 'not'}`)
})

t.test('durations are read as Go writes them, in seconds', async (t) => {
  const cases: Array<[string, number | undefined]> = [
    ['0', 0],
    ['0s', 0],
    ['90s', 90],
    ['15m', 900],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['500ms', 0.5],
    ['2h0m0s', 7200],
    ['.5m', 30],
    ['', undefined],
    ['15', undefined],
    ['-5m', undefined],
    ['+5m', undefined],
    ['5 m', undefined],
    ['1d', undefined],
    ['m', undefined],
    ['1h 30m', undefined]
  ]
  for (const [text, seconds] of cases) t.equal(parseDuration(text), seconds, JSON.stringify(text))
})

t.test('resolvePool applies every default', async (t) => {
  const spec = {
    cell: { guestTemplate: { guestClassRef: { name: 'c' }, imageRef: { name: 'i' } }, gpu: { dra: { resourceClaimTemplateName: 'vfio' } } },
    bootstrap: { joinSecretRef: { name: 'join' } },
    workloadCluster: { kubeconfigSecretRef: { name: 'kc' } }
  }
  t.same(poolProblems('p', spec), [])
  const expected: ResolvedPool = {
    replicas: 1,
    guestTemplate: { guestClassRef: { name: 'c' }, imageRef: { name: 'i' } },
    gpu: {
      count: 1,
      backend: 'DRA',
      dra: { claim: { kind: 'resourceClaimTemplateName', name: 'vfio' }, requestName: 'gpu', tier: 'pcie', hugepages: '' }
    },
    nodeIPFrom: '',
    hostname: 'CellName',
    joinSecretName: 'join',
    joinSecretKey: 'user-data',
    bootstrapReadyTimeoutSeconds: 900,
    workload: { kubeconfigSecretName: 'kc', key: 'value', labels: {}, annotations: {}, taints: [] },
    autoscaling: {
      enabled: false,
      minReplicas: 1,
      maxReplicas: 1,
      stabilizationWindowSeconds: 600,
      scaleDown: 'Manual',
      scaleDownStabilizationWindowSeconds: 1800
    },
    capacity: {
      readyTimeoutSeconds: 300,
      expectedDevicesPerCell: 1,
      resourceName: 'nvidia.com/gpu',
      mode: 'DevicePlugin',
      deviceClassName: ''
    },
    deletion: { policy: 'Drain', drainTimeoutSeconds: 600 },
    updatePolicy: 'Manual'
  }
  t.same(resolvePool(spec), expected)
})

t.test('resolvePool reads every field that is set', async (t) => {
  const spec = {
    replicas: 1,
    cell: {
      guestTemplate: { guestClassRef: { name: 'c' }, imageRef: { name: 'i' }, interfaces: [{ name: 'lan' }] },
      gpu: { count: 1, backend: 'Native', native: { gpuProfileRef: { name: 'a100' } } },
      nodeIPFrom: 'lan'
    },
    bootstrap: { joinSecretRef: { name: 'join' }, joinSecretKey: 'cloud-init', hostname: 'None', readyTimeout: '20m' },
    workloadCluster: {
      kubeconfigSecretRef: { name: 'kc' },
      key: 'kubeconfig',
      node: {
        labels: { z: '1', a: '2' },
        annotations: { 'x/y': 'z' },
        taints: [
          { key: 'k', value: '', effect: 'NoExecute', timeAdded: '2026-01-01T00:00:00Z' },
          { key: 'j', value: 'v', effect: 'NoSchedule' }
        ]
      }
    },
    capacity: {
      readyTimeout: '90s',
      hami: { expectedDevicesPerCell: 2, resourceName: 'example.com/vgpu', mode: 'DRA', deviceClassName: 'hami-core-gpu.project-hami.io' }
    },
    autoscaling: {
      enabled: true,
      minReplicas: 0,
      maxReplicas: 4,
      stabilizationWindow: '1m',
      scaleDown: 'Auto',
      scaleDownStabilizationWindow: '1h'
    },
    deletion: { policy: 'Force', drainTimeout: '0s' },
    updatePolicy: { type: 'RollingUpdate' }
  }
  t.same(poolProblems('p', spec), [])
  const pool = resolvePool(spec)
  t.same(pool.gpu, { count: 1, backend: 'Native', native: { profile: 'a100' } })
  t.same([pool.nodeIPFrom, pool.hostname, pool.joinSecretKey, pool.bootstrapReadyTimeoutSeconds], ['lan', 'None', 'cloud-init', 1200])
  t.same(pool.workload, {
    kubeconfigSecretName: 'kc',
    key: 'kubeconfig',
    labels: { a: '2', z: '1' },
    annotations: { 'x/y': 'z' },
    taints: [
      { effect: 'NoExecute', key: 'k' },
      { effect: 'NoSchedule', key: 'j', value: 'v' }
    ]
  })
  t.same(Object.keys(pool.workload.labels), ['a', 'z'], 'labels sorted by key')
  t.same(pool.autoscaling, {
    enabled: true,
    minReplicas: 0,
    maxReplicas: 4,
    stabilizationWindowSeconds: 60,
    scaleDown: 'Auto',
    scaleDownStabilizationWindowSeconds: 3600
  })
  t.same(pool.capacity, {
    readyTimeoutSeconds: 90,
    expectedDevicesPerCell: 2,
    resourceName: 'example.com/vgpu',
    mode: 'DRA',
    deviceClassName: 'hami-core-gpu.project-hami.io'
  })
  t.same(pool.deletion, { policy: 'Force', drainTimeoutSeconds: 0 })
  t.equal(pool.updatePolicy, 'RollingUpdate')
})

t.test('the autoscaling floor defaults to spec.replicas and the ceiling never drops below it', async (t) => {
  const spec = variant((s) => {
    s.replicas = 3
    s.autoscaling = { enabled: true, maxReplicas: 5 }
  })
  t.same(poolProblems('p', spec), [])
  t.same([resolvePool(spec).autoscaling.minReplicas, resolvePool(spec).autoscaling.maxReplicas], [3, 5])
  const low = variant((s) => {
    s.replicas = 4
    s.autoscaling = { enabled: true, maxReplicas: 2 }
  })
  t.same([resolvePool(low).autoscaling.minReplicas, resolvePool(low).autoscaling.maxReplicas], [4, 4])
})

t.test('resolvePool copies the guestTemplate', async (t) => {
  const spec = base()
  const pool = resolvePool(spec)
  ;(pool.guestTemplate.imageRef as { name: string }).name = 'changed'
  t.equal(((spec.cell as any).guestTemplate.imageRef as { name: string }).name, 'gpu-noble')
})

t.test('any JSON in any field gives problems or none, never an exception, and each problem names a field', async (t) => {
  const paths = [
    ['cell'],
    ['cell', 'guestTemplate'],
    ['cell', 'gpu'],
    ['cell', 'gpu', 'dra'],
    ['cell', 'nodeIPFrom'],
    ['bootstrap'],
    ['bootstrap', 'joinSecretRef'],
    ['workloadCluster', 'node', 'labels'],
    ['workloadCluster', 'node', 'taints'],
    ['autoscaling'],
    ['capacity', 'hami'],
    ['deletion'],
    ['replicas']
  ]
  fc.assert(
    fc.property(fc.constantFrom(...paths), fc.jsonValue(), fc.string(), (path, value, name) => {
      const spec = base()
      let at: Record<string, unknown> = spec
      for (const key of path.slice(0, -1)) {
        if (typeof at[key] !== 'object' || at[key] === null) at[key] = {}
        at = at[key] as Record<string, unknown>
      }
      at[path[path.length - 1] as string] = value
      const problems = poolProblems(name, spec)
      resolvePool(spec)
      return problems.every(
        (p) => (p.field === 'metadata.name' || p.field.startsWith('spec')) && p.message.startsWith(p.field.split('[')[0] ?? '')
      )
    }),
    { numRuns: 400 }
  )
  t.pass('400 random specs')
})

t.test('a guestTemplate reference takes only a name: a namespace or a kind beside it is refused, naming the field', async (t) => {
  const spec = variant((s) => {
    s.cell.guestTemplate.imageRef = { name: 'gpu-noble', namespace: 'kube-system', kind: 'ClusterSwiftImage' }
    s.cell.guestTemplate.guestClassRef = { name: 'gpu-worker', apiGroup: 'swift.kubeswift.io' }
    s.cell.guestTemplate.dataDiskRef = { name: 7 }
    s.cell.guestTemplate.interfaces = [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'routable', namespace: 'other-team' } }]
  })
  t.same(
    poolProblems('inference', spec).filter((p) => /Ref/.test(p.field)),
    [
      {
        field: 'spec.cell.guestTemplate.imageRef.namespace',
        message:
          "spec.cell.guestTemplate.imageRef.namespace is not allowed: imageRef takes only a name, of an object in the pool's namespace"
      },
      {
        field: 'spec.cell.guestTemplate.imageRef.kind',
        message: "spec.cell.guestTemplate.imageRef.kind is not allowed: imageRef takes only a name, of an object in the pool's namespace"
      },
      {
        field: 'spec.cell.guestTemplate.guestClassRef.apiGroup',
        message:
          "spec.cell.guestTemplate.guestClassRef.apiGroup is not allowed: guestClassRef takes only a name, of an object in the pool's namespace"
      },
      { field: 'spec.cell.guestTemplate.dataDiskRef.name', message: 'spec.cell.guestTemplate.dataDiskRef.name 7 is not a name' },
      {
        field: 'spec.cell.guestTemplate.interfaces[1].networkRef.namespace',
        message:
          "spec.cell.guestTemplate.interfaces[1].networkRef.namespace is not allowed: networkRef takes only a name, of an object in the pool's namespace"
      }
    ]
  )
  const named = variant((s) => {
    s.cell.guestTemplate.interfaces = [{ name: 'primary' }, { name: 'routable', networkRef: { name: 'routable-net' } }]
  })
  t.same(poolProblems('inference', named), [], 'a networkRef by name alone is fine')
})
