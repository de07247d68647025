// The workload agent's pure core, rule by rule (docs/workload.md steps 1-5). Every expectation is
// written out here; nothing is produced by the code under test.
import t, { type Test } from 'tap'
import { decide, type CoreOptions } from '../../hooks/agent/nodeset/decide/core.ts'
import type { Action, CellNodeSetInput, NodeHeartbeats, ObservedNode, WorkloadSnapshot } from '../../hooks/agent/model/observed.ts'
import type { Applied, CellNode, CellNodeSetStatus } from '../../hooks/api/cellnodeset.ts'
import {
  CELL_KEYS,
  cellLabels,
  cns,
  DEAD,
  entry,
  GUEST,
  LIVE,
  MANAGED,
  MS,
  node,
  nodeActions,
  NOW,
  NOW_S,
  POOL_UID,
  record,
  recorded,
  snap,
  type NodeSpec
} from '../support/agent-core-fixtures.ts'

/** A Node already carrying everything `entry()` asks for. */
const settled = (more: NodeSpec = {}): ObservedNode => node(more)

/** The Node actions of the pass after `input`'s: the record the first stored, the Node unchanged. */
function secondPass(t: Test, input: CellNodeSetInput, snapshot: WorkloadSnapshot, options: CoreOptions = {}): Action[] {
  const first = decide(input, snapshot, NOW, options)
  t.same(nodeActions(first.actions), [], 'the first pass only records what it writes next')
  return nodeActions(decide({ ...input, status: first.status }, snapshot, NOW, options).actions)
}

t.test('listed Node, same instance', async (t) => {
  const cases: Array<{ name: string; entry: CellNode; record: Applied; node: ObservedNode; expected: Action[] }> = [
    {
      name: 'a Node already as required is not written',
      entry: entry(),
      record: record(),
      node: settled(),
      expected: []
    },
    {
      name: 'missing labels and annotations the record names are set',
      entry: entry({ labels: { team: 'ml' }, annotations: { note: 'hi' } }),
      record: record({ labels: [...CELL_KEYS, 'team'].sort(), annotations: ['note'] }),
      node: node({
        labels: { 'cells.kubeswift.io/pool-uid': POOL_UID, 'cells.kubeswift.io/instance': GUEST, 'kubernetes.io/hostname': 'pool-a-0' }
      }),
      expected: [
        {
          type: 'patchNode',
          name: 'pool-a-0',
          patch: {
            metadata: {
              labels: {
                team: 'ml',
                'cells.kubeswift.io/pool': 'pool-a',
                'cells.kubeswift.io/cell': 'pool-a-0',
                'cells.kubeswift.io/cell-index': '0'
              },
              annotations: { note: 'hi' }
            }
          }
        }
      ]
    },
    {
      name: 'a changed label value is patched alone',
      entry: entry({ labels: { team: 'ml' } }),
      record: record({ labels: [...CELL_KEYS, 'team'].sort() }),
      node: node({ labels: { ...cellLabels(GUEST), team: 'cv' } }),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { team: 'ml' } } } }]
    },
    {
      name: 'a label the agent recorded and no longer wants is removed; one it did not record is kept',
      entry: entry(),
      record: record({ labels: [...CELL_KEYS, 'team'].sort() }),
      node: node({ labels: { ...cellLabels(GUEST), team: 'ml', owner: 'admin' } }),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { team: null } } } }]
    },
    {
      name: "an annotation the agent recorded and no longer wants is removed; HAMi's annotations are kept",
      entry: entry(),
      record: record({ annotations: ['note'] }),
      node: node({ annotations: { note: 'hi', 'hami.io/node-nvidia-register': '[]' } }),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { metadata: { annotations: { note: null } } } }]
    },
    {
      name: "a missing taint is added to the Node's own taints, with the resourceVersion as a guard",
      entry: entry({ taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }] }),
      record: record({ taints: [{ key: 'gpu', effect: 'NoSchedule' }] }),
      node: settled({ taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] }),
      expected: [
        {
          type: 'patchNode',
          name: 'pool-a-0',
          patch: {
            metadata: { resourceVersion: '7' },
            spec: {
              taints: [
                { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
                { key: 'gpu', value: 'true', effect: 'NoSchedule' }
              ]
            }
          }
        }
      ]
    },
    {
      name: 'taints match by key and effect: a new value replaces the old one in place',
      entry: entry({ taints: [{ key: 'gpu', value: 'b', effect: 'NoSchedule' }] }),
      record: record({ taints: [{ key: 'gpu', effect: 'NoSchedule' }] }),
      node: settled({
        taints: [
          { key: 'gpu', value: 'a', effect: 'NoSchedule' },
          { key: 'gpu', value: 'x', effect: 'NoExecute' }
        ]
      }),
      expected: [
        {
          type: 'patchNode',
          name: 'pool-a-0',
          patch: {
            metadata: { resourceVersion: '7' },
            spec: {
              taints: [
                { key: 'gpu', value: 'b', effect: 'NoSchedule' },
                { key: 'gpu', value: 'x', effect: 'NoExecute' }
              ]
            }
          }
        }
      ]
    },
    {
      name: 'a taint the agent recorded and no longer wants is removed; a taint someone else set stays',
      entry: entry(),
      record: record({ taints: [{ key: 'gpu', effect: 'NoSchedule' }] }),
      node: settled({
        taints: [
          { key: 'gpu', value: 'a', effect: 'NoSchedule' },
          { key: 'admin', effect: 'NoSchedule' }
        ]
      }),
      expected: [
        {
          type: 'patchNode',
          name: 'pool-a-0',
          patch: { metadata: { resourceVersion: '7' }, spec: { taints: [{ key: 'admin', effect: 'NoSchedule' }] } }
        }
      ]
    },
    {
      name: 'cordon true makes the Node unschedulable once the record claims the cordon',
      entry: entry({ cordon: true }),
      record: record({ cordoned: true }),
      node: settled(),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { spec: { unschedulable: true } } }]
    },
    {
      name: 'cordon true on a Node someone else cordoned writes nothing',
      entry: entry({ cordon: true }),
      record: record(),
      node: settled({ unschedulable: true }),
      expected: []
    },
    {
      name: 'cordon false clears a cordon the agent recorded',
      entry: entry({ cordon: false }),
      record: record({ cordoned: true }),
      node: settled({ unschedulable: true }),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { spec: { unschedulable: null } } }]
    },
    {
      name: 'cordon false leaves a cordon someone else set',
      entry: entry({ cordon: false }),
      record: record(),
      node: settled({ unschedulable: true }),
      expected: []
    },
    {
      name: 'a patch drops the annotation of earlier releases; without a patch it stays',
      entry: entry({ labels: { team: 'ml' } }),
      record: record({ labels: [...CELL_KEYS, 'team'].sort() }),
      node: node({ annotations: { [MANAGED]: '{}' } }),
      expected: [{ type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { team: 'ml' }, annotations: { [MANAGED]: null } } } }]
    }
  ]
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const decision = decide(recorded([c.entry], c.record), snap([c.node]), NOW)
      t.same(nodeActions(decision.actions), c.expected)
    })
  }
})

t.test('listed Node, another or no instance', async (t) => {
  // What a cell's kubelet registers from its bootstrap's --node-labels: the cell labels without
  // the instance, which is not known when the bootstrap Secret is rendered.
  const { 'cells.kubeswift.io/instance': _instance, ...registered } = cellLabels(GUEST)
  const cases: Array<{ name: string; entry: CellNode; node: ObservedNode; actions: Action[]; row: Record<string, unknown> }> = [
    {
      name: 'another instance and not live: stale, deleted and recorded',
      entry: entry(),
      node: node({ labels: cellLabels('uid-old'), beats: DEAD }),
      actions: [{ type: 'deleteNode', name: 'pool-a-0', uid: 'uid-pool-a-0', resourceVersion: '7', reason: 'Stale', instance: 'uid-old' }],
      row: { conflict: undefined }
    },
    {
      name: 'the entry has no instance yet and the Node is not live: stale',
      entry: entry({ instance: '' }),
      node: node({ labels: cellLabels('uid-old'), beats: DEAD }),
      actions: [{ type: 'deleteNode', name: 'pool-a-0', uid: 'uid-pool-a-0', resourceVersion: '7', reason: 'Stale', instance: 'uid-old' }],
      row: { conflict: undefined }
    },
    {
      name: 'another instance and live: nothing written, a conflict naming the other instance',
      entry: entry(),
      node: node({ labels: cellLabels('uid-old') }),
      actions: [],
      row: { conflict: true }
    },
    {
      name: 'the entry has no instance yet and the Node is live: conflict',
      entry: entry({ instance: '' }),
      node: node({ labels: cellLabels('uid-old') }),
      actions: [],
      row: { conflict: true }
    },
    {
      name: 'a live Node as its kubelet registered it (no instance label, no record of it) is adopted: recorded first, written next',
      entry: entry(),
      node: node({ labels: registered }),
      actions: [],
      row: { conflict: undefined }
    },
    {
      name: 'a Node without an instance label that is not live is stale',
      entry: entry(),
      node: node({ labels: registered, beats: DEAD }),
      actions: [{ type: 'deleteNode', name: 'pool-a-0', uid: 'uid-pool-a-0', resourceVersion: '7', reason: 'Stale', instance: '' }],
      row: { conflict: undefined }
    },
    {
      name: 'the entry has no instance yet: a freshly registered live Node is a conflict, not adopted',
      entry: entry({ instance: '' }),
      node: node({ labels: registered }),
      actions: [],
      row: { conflict: true }
    },
    {
      name: 'a Node of another pool (other pool-uid) is never written, even when not live',
      entry: entry(),
      node: node({ labels: { ...cellLabels(GUEST), 'cells.kubeswift.io/pool-uid': 'uid-other' }, beats: DEAD }),
      actions: [],
      row: { conflict: true }
    },
    {
      name: 'a Node without the pool-uid label is never written',
      entry: entry(),
      node: node({ labels: { 'cells.kubeswift.io/instance': GUEST }, beats: DEAD }),
      actions: [],
      row: { conflict: true }
    }
  ]
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const decision = decide(cns([c.entry]), snap([c.node]), NOW)
      t.same(nodeActions(decision.actions), c.actions)
      const row = decision.status.nodes?.[0]
      t.equal(row?.conflict, c.row.conflict)
      if (c.row.conflict === true) t.ok(row?.message !== undefined && row.message.length > 0, 'the row says why')
    })
  }
  t.test('an adopted Node gets the instance label and the rest in the next pass', async (t) => {
    t.same(secondPass(t, cns([entry()]), snap([node({ labels: registered })])), [
      { type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { 'cells.kubeswift.io/instance': GUEST } } } }
    ])
  })
  t.test('the conflict message names the other instance', async (t) => {
    const row = decide(cns([entry()]), snap([node({ labels: cellLabels('uid-old') })]), NOW).status.nodes?.[0]
    t.match(row?.message, /uid-old/)
  })
  t.test('a stale Node is recorded in swept with its instance and the time', async (t) => {
    const decision = decide(cns([entry()]), snap([node({ labels: cellLabels('uid-old'), beats: DEAD })]), NOW)
    t.same(decision.status.swept, [{ name: 'pool-a-0', instance: 'uid-old', reason: 'Stale', time: NOW_S }])
  })
})

t.test('orphans', async (t) => {
  const orphan = (beats: NodeHeartbeats, labels = cellLabels('uid-9', 'pool-a-9', '9')): ObservedNode =>
    node({ name: 'pool-a-9', labels, beats })
  t.test('a pool Node no entry names and not live is deleted as an orphan', async (t) => {
    const decision = decide(cns([entry()]), snap([settled(), orphan(DEAD)]), NOW)
    t.same(nodeActions(decision.actions), [
      { type: 'deleteNode', name: 'pool-a-9', uid: 'uid-pool-a-9', resourceVersion: '7', reason: 'Orphan', instance: 'uid-9' }
    ])
    t.same(decision.status.swept, [{ name: 'pool-a-9', instance: 'uid-9', reason: 'Orphan', time: NOW_S }])
    t.equal(decision.status.nodeCount, 1)
  })
  t.test('a live orphan is kept and counted', async (t) => {
    const decision = decide(cns([entry()]), snap([settled(), orphan(LIVE)]), NOW)
    t.same(nodeActions(decision.actions), [])
    t.equal(decision.status.nodeCount, 2)
  })
  t.test('a restarted agent does not delete an orphan it has watched for less than 90 s', async (t) => {
    const fresh: NodeHeartbeats = { watchedSince: MS - 30_000, lease: { value: 'r', changedAt: MS - 30_000 } }
    t.same(nodeActions(decide(cns([]), snap([orphan(fresh)]), NOW).actions), [])
  })
  t.test('an unlisted Node of another pool is not touched and not counted', async (t) => {
    const decision = decide(cns([]), snap([orphan(DEAD, { ...cellLabels('x'), 'cells.kubeswift.io/pool-uid': 'uid-other' })]), NOW)
    t.same(nodeActions(decision.actions), [])
    t.equal(decision.status.nodeCount, 0)
  })
  t.test('swept keeps the last 20', async (t) => {
    const old = Array.from({ length: 20 }, (_, i) => ({
      name: `old-${i}`,
      instance: '',
      reason: 'Orphan' as const,
      time: '2026-01-01T00:00:00Z'
    }))
    const decision = decide(cns([], { status: { swept: old } }), snap([orphan(DEAD)]), NOW)
    t.equal(decision.status.swept?.length, 20)
    t.equal(decision.status.swept?.[0]?.name, 'old-1')
    t.equal(decision.status.swept?.[19]?.name, 'pool-a-9')
  })
})

t.test('the row reports what the agent saw', async (t) => {
  const register = JSON.stringify([{ id: 'GPU-a', devmem: 81920, devcore: 100, type: 'A100', health: true }])
  const running = {
    metadata: {
      name: 'r',
      annotations: { 'hami.io/vgpu-devices-allocated': 'GPU-a,NVIDIA,1000,10:;', 'hami.io/vgpu-devices-to-allocate': ';' }
    },
    spec: { nodeName: 'pool-a-0' },
    status: { phase: 'Running' }
  }
  const decision = decide(
    cns([entry()]),
    snap([
      settled({
        annotations: { 'hami.io/node-nvidia-register': register },
        unschedulable: false,
        pods: [running]
      })
    ]),
    NOW
  )
  t.same(decision.status.nodes, [
    {
      name: 'pool-a-0',
      present: true,
      instance: GUEST,
      poolUID: POOL_UID,
      live: true,
      ready: true,
      unschedulable: false,
      devices: [{ id: 'GPU-a', type: 'A100', memoryMiB: 81920, cores: 100, healthy: true }],
      registration: 'Parsed',
      allocations: { read: true, pods: 1, inFlight: false },
      applied: record()
    }
  ])
  t.test('an absent Node has a row saying so', async (t) => {
    t.same(decide(cns([entry()]), snap([]), NOW).status.nodes, [{ name: 'pool-a-0', present: false }])
  })
  t.test('a registration in neither format is Unparseable, with a message', async (t) => {
    const row = decide(cns([entry()]), snap([settled({ annotations: { 'hami.io/node-nvidia-register': 'garbage' } })]), NOW).status
      .nodes?.[0]
    t.equal(row?.registration, 'Unparseable')
    t.match(row?.message, /neither HAMi format/)
  })
  t.test('a NotReady Node is not ready', async (t) => {
    t.equal(decide(cns([entry()]), snap([settled({ ready: false })]), NOW).status.nodes?.[0]?.ready, false)
  })
})

t.test('demand is read only when the spec asks for it', async (t) => {
  const pending = {
    metadata: { name: 'p' },
    spec: { containers: [{ resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  }
  const without = decide(cns([]), snap([], [pending]), NOW)
  t.equal(without.status.demand, undefined)
  const withDemand = cns([])
  withDemand.spec.demand = { resources: ['nvidia.com/gpu'] }
  t.same(decide(withDemand, snap([], [pending]), NOW).status.demand, {
    read: true,
    pendingPods: 1,
    shapes: [{ devices: 1, memoryMiB: 0, cores: 0, pods: 1 }]
  })
  t.same(decide(withDemand, snap([], [], false), NOW).status.demand, { read: false, pendingPods: 0, shapes: [] })
})

t.test('status', async (t) => {
  const first = decide(cns([entry()]), snap([settled()]), NOW)
  t.test('a first observation is written, with the generation whose actions are done', async (t) => {
    t.equal(first.writeStatus, true)
    t.equal(first.status.observedGeneration, 3)
    t.equal(first.status.observedTime, NOW_S)
    t.same(first.status.conditions, [
      {
        type: 'Reachable',
        status: 'True',
        reason: 'Reachable',
        message: 'The workload cluster answered every read of this pass.',
        lastTransitionTime: NOW_S
      }
    ])
  })
  t.test('an unchanged status is not written within 30 s', async (t) => {
    const later = decide(cns([entry()], { status: first.status }), snap([settled()]), new Date(MS + 29_000))
    t.equal(later.writeStatus, false)
    t.equal(later.status.observedTime, NOW_S)
  })
  t.test('an unchanged status refreshes observedTime after 30 s', async (t) => {
    const later = decide(cns([entry()], { status: first.status }), snap([settled()]), new Date(MS + 30_000))
    t.equal(later.writeStatus, true)
    t.equal(later.status.observedTime, '2026-11-30T12:00:30Z')
  })
  t.test('a change is written at once', async (t) => {
    const later = decide(cns([entry()], { status: first.status }), snap([settled({ ready: false })]), new Date(MS + 5_000))
    t.equal(later.writeStatus, true)
  })
  t.test('while Node writes are pending, observedGeneration stays at the last generation carried out', async (t) => {
    const stored = {
      observedGeneration: 2,
      nodes: [{ name: 'pool-a-0', present: true, instance: GUEST, applied: record({ cordoned: true }) }]
    }
    const pendingWrite = decide(cns([entry({ cordon: true })], { status: stored }), snap([settled()]), NOW)
    t.equal(pendingWrite.status.observedGeneration, 2)
  })
  t.test('... and so it does while the record claims what is still to be written', async (t) => {
    const stored = { observedGeneration: 2, nodes: [{ name: 'pool-a-0', present: true, instance: GUEST, applied: record() }] }
    const claiming = decide(cns([entry({ cordon: true })], { status: stored }), snap([settled()]), NOW)
    t.same(nodeActions(claiming.actions), [])
    t.equal(claiming.status.nodes?.[0]?.applied?.cordoned, true, 'the cordon is claimed')
    t.equal(claiming.status.observedGeneration, 2)
  })
})

t.test('finalizer and deletion', async (t) => {
  t.test('a served CellNodeSet without the finalizer gets it', async (t) => {
    const bare = cns([])
    bare.metadata.finalizers = []
    t.same(decide(bare, snap([]), NOW).actions, [{ type: 'addFinalizer' }])
  })
  const deleting = (since: number, status?: CellNodeSetStatus): CellNodeSetInput => {
    const c = cns([entry()], status === undefined ? {} : { status })
    c.metadata.deletionTimestamp = new Date(MS - since).toISOString()
    return c
  }
  t.test("a deleting CellNodeSet sweeps its pool's Nodes that are not live, listed or not", async (t) => {
    const decision = decide(
      deleting(60_000),
      snap([node({ beats: DEAD }), node({ name: 'pool-a-1', labels: cellLabels('u1', 'pool-a-1', '1'), beats: LIVE })]),
      NOW
    )
    t.same(decision.actions, [
      { type: 'deleteNode', name: 'pool-a-0', uid: 'uid-pool-a-0', resourceVersion: '7', reason: 'Orphan', instance: GUEST }
    ])
  })
  t.test('... and writes nothing else to them', async (t) => {
    const decision = decide(
      deleting(60_000),
      snap([node({ labels: { 'cells.kubeswift.io/pool-uid': POOL_UID, 'cells.kubeswift.io/instance': GUEST } })]),
      NOW
    )
    t.same(decision.actions, [])
  })
  t.test('the finalizer goes once no pool Node is left', async (t) => {
    t.same(decide(deleting(60_000), snap([]), NOW).actions, [
      { type: 'removeFinalizer', nodesLeft: [], why: 'no Node of the pool is left' }
    ])
  })
  t.test('a live pool Node holds the finalizer until 15 minutes after deletion', async (t) => {
    const live = node({ beats: LIVE })
    t.same(decide(deleting(14 * 60_000), snap([live]), NOW).actions, [])
    t.same(decide(deleting(15 * 60_000), snap([live]), NOW).actions, [
      { type: 'removeFinalizer', nodesLeft: ['pool-a-0'], why: '15 minutes have passed since the CellNodeSet was deleted' }
    ])
  })
  const unreachable: WorkloadSnapshot = {
    reachability: { reason: 'Unreachable', message: 'connect ECONNREFUSED' },
    nodes: [],
    unbound: { read: false, items: [] }
  }
  const downSince = (ms: number): CellNodeSetStatus => ({
    conditions: [
      {
        type: 'Reachable',
        status: 'False',
        reason: 'Unreachable',
        message: 'x',
        lastTransitionTime: new Date(MS - ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
      }
    ],
    nodes: [{ name: 'pool-a-0', present: true }]
  })
  t.test('unreachable for less than 10 minutes: the finalizer stays', async (t) => {
    t.same(decide(deleting(60_000, downSince(9 * 60_000)), unreachable, NOW).actions, [])
  })
  t.test('unreachable for 10 minutes: the finalizer goes, naming the Nodes last seen', async (t) => {
    t.same(decide(deleting(60_000, downSince(10 * 60_000)), unreachable, NOW).actions, [
      { type: 'removeFinalizer', nodesLeft: ['pool-a-0'], why: 'the workload cluster has been unreachable for 10 minutes' }
    ])
  })
})

t.test('an unreachable workload cluster freezes the status and writes nothing there', async (t) => {
  const seen = decide(cns([entry()]), snap([node({ labels: cellLabels('uid-old'), beats: DEAD })]), NOW).status
  const frozen = decide(
    cns([entry()], { status: seen }),
    { reachability: { reason: 'Forbidden', message: 'HTTP 403' }, nodes: [], unbound: { read: false, items: [] } },
    new Date(MS + 60_000)
  )
  t.same(frozen.actions, [])
  t.equal(frozen.writeStatus, true)
  t.same(frozen.status.nodes, seen.nodes)
  t.equal(frozen.status.observedTime, seen.observedTime, 'observedTime is the last complete observation')
  t.same(frozen.status.conditions, [
    { type: 'Reachable', status: 'False', reason: 'Forbidden', message: 'HTTP 403', lastTransitionTime: '2026-11-30T12:01:00Z' }
  ])
  const again = decide(
    cns([entry()], { status: frozen.status }),
    { reachability: { reason: 'Forbidden', message: 'HTTP 403' }, nodes: [], unbound: { read: false, items: [] } },
    new Date(MS + 120_000)
  )
  t.equal(again.writeStatus, false, 'the same outage is not written again')
})

t.test('garbage Nodes in the snapshot are skipped, never thrown on', async (t) => {
  const bad: ObservedNode[] = [
    { node: null, beats: LIVE, pods: { read: true, items: [] } },
    { node: { metadata: { name: 7 } }, beats: LIVE, pods: { read: true, items: [] } },
    {
      node: { metadata: { name: 'pool-a-0', labels: 'x', annotations: [1] }, spec: { taints: 'no' }, status: { conditions: 'x' } },
      beats: LIVE,
      pods: { read: true, items: [null, 1] }
    }
  ]
  const decision = decide(cns([entry()]), snap(bad), NOW)
  t.equal(decision.status.nodes?.[0]?.conflict, true, 'a Node without readable labels lacks the pool uid, so it is not written')
  t.same(nodeActions(decision.actions), [])
})

t.test('restricted labels and taints are never written, whatever the CellNodeSet asks, and the row says so', async (t) => {
  const asked = entry({
    labels: {
      team: 'ml',
      'node-restriction.kubernetes.io/trusted': 'true',
      'node-role.kubernetes.io/control-plane': '',
      'kubernetes.io/role': 'master',
      'node-role.kubernetes.io/gpu-cell': ''
    },
    taints: [
      { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' },
      { key: 'example.com/gpu', effect: 'NoSchedule' }
    ]
  })
  const decision = decide(cns([asked]), snap([settled()]), NOW)
  t.same(secondPass(t, cns([asked]), snap([settled()])), [
    {
      type: 'patchNode',
      name: 'pool-a-0',
      patch: {
        metadata: { resourceVersion: '7', labels: { team: 'ml', 'node-role.kubernetes.io/gpu-cell': '' } },
        spec: { taints: [{ key: 'example.com/gpu', effect: 'NoSchedule' }] }
      }
    }
  ])
  t.equal(
    decision.status.nodes?.[0]?.message,
    'not written: label node-restriction.kubernetes.io/trusted, label node-role.kubernetes.io/control-plane, label kubernetes.io/role, ' +
      "taint node.kubernetes.io/out-of-service:NoExecute (a pool may not set what NodeRestriction keeps from a kubelet, or what Kubernetes' controllers own)"
  )
})

t.test('a restricted key the admin permits (PERMITTED_NODE_KEYS) is written; the rest still are not', async (t) => {
  const asked = entry({
    labels: { 'node-restriction.kubernetes.io/trusted': 'true', 'node-role.kubernetes.io/control-plane': '' },
    taints: [{ key: 'node-restriction.kubernetes.io/trusted', effect: 'NoSchedule' }]
  })
  const options = { permittedNodeKeys: ['node-restriction.kubernetes.io/'] }
  t.same(secondPass(t, cns([asked]), snap([settled()]), options), [
    {
      type: 'patchNode',
      name: 'pool-a-0',
      patch: {
        metadata: { resourceVersion: '7', labels: { 'node-restriction.kubernetes.io/trusted': 'true' } },
        spec: { taints: [{ key: 'node-restriction.kubernetes.io/trusted', effect: 'NoSchedule' }] }
      }
    }
  ])
  const decision = decide(cns([asked]), snap([settled()]), NOW, options)
  t.match(decision.status.nodes?.[0]?.message, /^not written: label node-role\.kubernetes\.io\/control-plane \(/)
  t.same(
    secondPass(t, cns([asked]), snap([settled()])),
    [
      {
        type: 'patchNode',
        name: 'pool-a-0',
        patch: {
          metadata: { resourceVersion: '7' },
          spec: { taints: [{ key: 'node-restriction.kubernetes.io/trusted', effect: 'NoSchedule' }] }
        }
      }
    ],
    'without the permit, the label is not written (the taint key is not a restricted one)'
  )
})

t.test('a restricted label the agent set before is removed like any it no longer wants', async (t) => {
  const before = node({ labels: { ...cellLabels(GUEST), 'node-restriction.kubernetes.io/trusted': 'true' } })
  const asked = entry({ labels: { 'node-restriction.kubernetes.io/trusted': 'true' } })
  const decision = decide(
    recorded([asked], record({ labels: [...CELL_KEYS, 'node-restriction.kubernetes.io/trusted'].sort() })),
    snap([before]),
    NOW
  )
  t.same(nodeActions(decision.actions), [
    { type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { 'node-restriction.kubernetes.io/trusted': null } } } }
  ])
})

t.test('a Cluster API cell: a Node registered without pool labels is adopted by its providerID', async (t) => {
  const providerID = 'kubeswift://ns/pool-a-0'
  const bare = { gpu: 'on' }
  const adopted = decide(cns([entry({ providerID })]), snap([node({ labels: bare, providerID })]), NOW)
  t.same(secondPass(t, cns([entry({ providerID })]), snap([node({ labels: bare, providerID })])), [
    { type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: cellLabels(GUEST) } } }
  ])
  t.equal(adopted.status.nodes?.[0]?.conflict, undefined)
  const cases: Array<{ name: string; entryID?: string; nodeID?: string; labels: Record<string, string> }> = [
    { name: 'another providerID', entryID: providerID, nodeID: 'kubeswift://ns/other', labels: bare },
    { name: 'no providerID on the Node', entryID: providerID, labels: bare },
    { name: 'no providerID in the entry', nodeID: providerID, labels: bare },
    {
      name: "another pool's uid label, whatever the providerID",
      entryID: providerID,
      nodeID: providerID,
      labels: { ...bare, 'cells.kubeswift.io/pool-uid': 'uid-other' }
    }
  ]
  for (const c of cases) {
    const e = c.entryID === undefined ? entry() : entry({ providerID: c.entryID })
    const decision = decide(cns([e]), snap([node({ labels: c.labels, ...(c.nodeID === undefined ? {} : { providerID: c.nodeID }) })]), NOW)
    t.same(nodeActions(decision.actions), [], `${c.name}: nothing written`)
    t.equal(decision.status.nodes?.[0]?.conflict, true, `${c.name}: a conflict`)
  }
})
