// Which Node labels and taints a cell pool may ask for (hooks/k8s/node-keys.ts): NodeRestriction's
// rules for what a kubelet may set on its own Node, and the taints Kubernetes' controllers own.
import t from 'tap'
import { withoutRestricted } from '../../hooks/agent/nodeset/decide/ensure.ts'
import {
  isPermitted,
  MAX_PERMITTED_NODE_KEYS,
  parsePermittedNodeKeys,
  restrictedLabelReason,
  restrictedTaintReason
} from '../../hooks/k8s/node-keys.ts'

t.test('labels: what NodeRestriction keeps from a kubelet is refused, except informational roles', async (t) => {
  // [key, refused], grouped by the rule that decides.
  const cases: Array<[string, boolean]> = [
    // NodeRestriction's own namespace, and its subdomains.
    ['node-restriction.kubernetes.io/trusted', true],
    ['gold.node-restriction.kubernetes.io/tier', true],
    // The control-plane roles; any other role only names what a Node is for.
    ['node-role.kubernetes.io/control-plane', true],
    ['node-role.kubernetes.io/master', true],
    // RKE's roles: Rancher's cluster agent prefers controlplane Nodes.
    ['node-role.kubernetes.io/controlplane', true],
    ['node-role.kubernetes.io/etcd', true],
    ['node-role.kubernetes.io/gpu-cell', false],
    ['node-role.kubernetes.io/worker', false],
    // Other kubernetes.io and k8s.io keys a kubelet may not set.
    ['kubernetes.io/role', true],
    ['kubernetes.io/anything', true],
    ['k8s.io/x', true],
    ['storage.k8s.io/x', true],
    ['topology.kubernetes.io/rack', true],
    // What a kubelet may set on itself.
    ['kubernetes.io/hostname', false],
    ['topology.kubernetes.io/zone', false],
    ['node.kubernetes.io/instance-type', false],
    ['node.kubernetes.io/exclude-from-external-load-balancers', false],
    ['feature.node.kubernetes.io/pci-10de.present', false],
    ['kubelet.kubernetes.io/x', false],
    // Outside Kubernetes' namespaces.
    ['gpu', false],
    ['example.com/team', false],
    ['notkubernetes.io/x', false],
    ['nvidia.com/gpu.product', false]
  ]
  for (const [key, refused] of cases)
    t.equal(restrictedLabelReason(key) !== undefined, refused, `${key}: ${refused ? 'refused' : 'allowed'}`)
})

t.test('taints: the node lifecycle, the cloud node controller and kubeadm keep theirs', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['node.kubernetes.io/not-ready', true],
    ['node.kubernetes.io/unreachable', true],
    ['node.kubernetes.io/unschedulable', true],
    ['node.kubernetes.io/memory-pressure', true],
    ['node.kubernetes.io/out-of-service', true],
    ['node.kubernetes.io/anything', true],
    ['node.cloudprovider.kubernetes.io/uninitialized', true],
    ['node.cloudprovider.kubernetes.io/shutdown', true],
    ['node-role.kubernetes.io/control-plane', true],
    ['node-role.kubernetes.io/master', true],
    ['node-role.kubernetes.io/controlplane', true],
    ['node-role.kubernetes.io/etcd', true],
    ['node-role.kubernetes.io/gpu-cell', false],
    ['feature.node.kubernetes.io/x', false],
    ['nvidia.com/gpu', false],
    ['example.com/gpu-cell', false],
    ['dedicated', false]
  ]
  for (const [key, refused] of cases)
    t.equal(restrictedTaintReason(key) !== undefined, refused, `${key}: ${refused ? 'refused' : 'allowed'}`)
})

t.test('an admin exception names a key or a whole namespace', async (t) => {
  t.equal(restrictedLabelReason('node-restriction.kubernetes.io/trusted', ['node-restriction.kubernetes.io/trusted']), undefined)
  t.equal(restrictedLabelReason('node-restriction.kubernetes.io/gold', ['node-restriction.kubernetes.io/']), undefined)
  t.ok(restrictedLabelReason('node-restriction.kubernetes.io/gold', ['node-restriction.kubernetes.io/trusted']) !== undefined)
  t.equal(restrictedTaintReason('node.kubernetes.io/out-of-service', ['node.kubernetes.io/out-of-service']), undefined)
  t.notOk(
    isPermitted('node-restriction.kubernetes.io', ['node-restriction.kubernetes.io/']),
    'a prefix covers keys under it, not a look-alike'
  )
})

t.test("the agent drops RKE's control-plane and etcd roles from what it writes, whatever a CellNodeSet says", async (t) => {
  const { entry, refused } = withoutRestricted({
    name: 'pool-a-0',
    labels: { 'node-role.kubernetes.io/controlplane': 'true', 'node-role.kubernetes.io/etcd': 'true', team: 'ml' },
    taints: [
      { key: 'node-role.kubernetes.io/controlplane', value: 'true', effect: 'NoSchedule' },
      { key: 'node-role.kubernetes.io/etcd', value: 'true', effect: 'NoExecute' },
      { key: 'gpu', effect: 'NoSchedule' }
    ]
  })
  t.same(entry.labels, { team: 'ml' })
  t.same(entry.taints, [{ key: 'gpu', effect: 'NoSchedule' }])
  t.same(refused, [
    'label node-role.kubernetes.io/controlplane',
    'label node-role.kubernetes.io/etcd',
    'taint node-role.kubernetes.io/controlplane:NoSchedule',
    'taint node-role.kubernetes.io/etcd:NoExecute'
  ])
})

t.test('the agent writes a restricted key the admin permits, and still drops the others', async (t) => {
  const cellNode = {
    name: 'pool-a-0',
    labels: { 'node-restriction.kubernetes.io/gpu': 'true', 'node-role.kubernetes.io/master': '', team: 'ml' },
    taints: [{ key: 'node.kubernetes.io/out-of-service', effect: 'NoExecute' as const }]
  }
  const { entry, refused } = withoutRestricted(cellNode, ['node-restriction.kubernetes.io/'])
  t.same(entry.labels, { 'node-restriction.kubernetes.io/gpu': 'true', team: 'ml' })
  t.same(entry.taints, [])
  t.same(refused, ['label node-role.kubernetes.io/master', 'taint node.kubernetes.io/out-of-service:NoExecute'])
})

t.test('PERMITTED_NODE_KEYS: keys and prefixes, blanks ignored, each bad entry named', async (t) => {
  t.same(parsePermittedNodeKeys(undefined), { keys: [], problems: [] })
  t.same(parsePermittedNodeKeys(' , '), { keys: [], problems: [] })
  t.same(parsePermittedNodeKeys('node-role.kubernetes.io/master, node-restriction.kubernetes.io/ ,node-role.kubernetes.io/master'), {
    keys: ['node-restriction.kubernetes.io/', 'node-role.kubernetes.io/master'],
    problems: []
  })
  const bad = parsePermittedNodeKeys('ok,a/b/c,/,UPPER.example.com/,x')
  t.same(bad.keys, ['ok', 'x'])
  t.same(
    bad.problems.map((p) => p.slice(0, p.indexOf(' is neither'))),
    ['PERMITTED_NODE_KEYS entry "a/b/c"', 'PERMITTED_NODE_KEYS entry "/"', 'PERMITTED_NODE_KEYS entry "UPPER.example.com/"']
  )
  const many = parsePermittedNodeKeys(Array.from({ length: MAX_PERMITTED_NODE_KEYS + 1 }, (_, i) => `k${i}`).join(','))
  t.same(many, {
    keys: [],
    problems: [`PERMITTED_NODE_KEYS names ${MAX_PERMITTED_NODE_KEYS + 1} keys; at most ${MAX_PERMITTED_NODE_KEYS} are allowed`]
  })
})
