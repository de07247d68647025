// The agent's record of what it wrote onto a Node, and which Node under a cell's name is the
// cell's (docs/workload.md, "The record"; docs/security.md, "The workload cluster"). The record
// lives in the CellNodeSet's status, which only the agent writes; a Node's kubelet may write the
// Node's annotations and its instance label, and neither may decide what the agent removes or
// which Node counts as the cell's. Every expectation is written out here.
import { Value } from '@sinclair/typebox/value'
import t, { type Test } from 'tap'
import { decide } from '../../hooks/agent/nodeset/decide/core.ts'
import type { CellNodeSetInput, Decision, NodeHeartbeats, ObservedNode, WorkloadSnapshot } from '../../hooks/agent/model/observed.ts'
import { CellNodeSetStatusSchema, type Applied, type CellNodeSetStatus } from '../../hooks/api/cellnodeset.ts'
import {
  cellLabels,
  CELL_KEYS,
  cns as cellNodeSet,
  DEAD,
  entry,
  GUEST,
  LIVE,
  MANAGED,
  node,
  nodeActions,
  NOW,
  POOL_UID,
  record,
  snap,
  type NodeSpec
} from '../support/agent-core-fixtures.ts'

const CELL_LABELS = cellLabels(GUEST)
/** What a cell's kubelet registers from its bootstrap's --node-labels: the cell labels, no instance. */
const { 'cells.kubeswift.io/instance': _instance, ...REGISTERED } = CELL_LABELS
/** An admin's quarantine: a taint and a label NodeRestriction keeps from the Node's kubelet. */
const QUARANTINE_TAINT = { key: 'example.com/quarantine', value: 'incident-42', effect: 'NoExecute' }
const TRUSTED_LABEL = 'node-restriction.kubernetes.io/quarantined'
/** The annotation a kubelet forges: it names the admin's taint and label as the agent's. */
const FORGED = JSON.stringify({
  labels: [...CELL_KEYS, TRUSTED_LABEL],
  annotations: [],
  taints: [{ key: QUARANTINE_TAINT.key, effect: 'NoExecute' }],
  cordoned: true
})
/** The CellNodeSet of pool-a, with `status` stored when given. */
const cns = (nodes: Parameters<typeof cellNodeSet>[0], status?: CellNodeSetStatus): CellNodeSetInput =>
  cellNodeSet(nodes, status === undefined ? {} : { status })
/** A stored status whose row of pool-a-0 holds `applied`. */
const stored = (applied: Applied): CellNodeSetStatus => ({ nodes: [{ name: 'pool-a-0', present: true, instance: GUEST, applied }] })

/** Passes with the Node unchanged between them, each starting from the status the one before wrote. */
function passes(input: CellNodeSetInput, snapshot: WorkloadSnapshot, count: number): Decision[] {
  const out: Decision[] = []
  let status = input.status
  for (let i = 0; i < count; i++) {
    const decision = decide(status === undefined ? input : { ...input, status }, snapshot, NOW)
    out.push(decision)
    status = decision.status
  }
  return out
}

/** The written status passes the CRD's schema (a status the API server refuses freezes the pool). */
function admitted(t: Test, status: CellNodeSetStatus): void {
  t.ok(
    Value.Check(CellNodeSetStatusSchema, status),
    `the status passes its schema: ${[...Value.Errors(CellNodeSetStatusSchema, status)].map((e) => e.path).join(', ')}`
  )
}

t.test('finding 3: a kubelet-written record makes the agent remove nothing', async (t) => {
  const quarantined = (more: NodeSpec = {}): ObservedNode =>
    node({
      labels: { ...CELL_LABELS, [TRUSTED_LABEL]: 'true' },
      annotations: { [MANAGED]: FORGED },
      taints: [QUARANTINE_TAINT],
      unschedulable: true,
      ...more
    })
  t.test('with the agent record stored: the forged annotation is not read at all', async (t) => {
    const [decision] = passes(cns([entry()], stored(record())), snap([quarantined()]), 1)
    t.same(nodeActions(decision?.actions ?? []), [], "the admin's NoExecute taint, trusted label and cordon stay")
    t.same(decision?.status.nodes?.[0]?.applied, record(), 'the record claims neither')
  })
  t.test('without a record yet (an upgrade): over several passes, nothing the annotation lists is removed', async (t) => {
    const upgraded = cns([entry()], { nodes: [{ name: 'pool-a-0', present: true, instance: GUEST }] })
    const decisions = passes(upgraded, snap([quarantined()]), 3)
    for (const [i, d] of decisions.entries()) t.same(nodeActions(d.actions), [], `pass ${i + 1} writes nothing`)
    t.same(decisions[2]?.status.nodes?.[0]?.applied, record(), 'the record claims the cell labels only')
  })
  t.test('nor a cordon it lists, with a record or without', async (t) => {
    const plain = (): ObservedNode => quarantined({ taints: [], labels: CELL_LABELS })
    for (const status of [{ nodes: [{ name: 'pool-a-0', present: true, instance: GUEST }] }, stored(record())]) {
      for (const d of passes(cns([entry({ cordon: false })], status), snap([plain()]), 2)) t.same(nodeActions(d.actions), [])
    }
  })
  t.test('keys recorded for another Node object under the name are not removed from this one', async (t) => {
    const previous = record({
      uid: 'uid-earlier-node',
      labels: [...CELL_KEYS, TRUSTED_LABEL].sort(),
      taints: [{ key: QUARANTINE_TAINT.key, effect: 'NoExecute' }]
    })
    const decisions = passes(
      cns([entry()], stored(previous)),
      snap([quarantined({ labels: { ...REGISTERED, [TRUSTED_LABEL]: 'true' }, annotations: {} })]),
      2
    )
    t.same(
      decisions[1]?.actions.filter((a) => a.type === 'patchNode'),
      [{ type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { 'cells.kubeswift.io/instance': GUEST } } } }],
      'the new registration is adopted; the taint and label stay'
    )
  })
})

t.test('the record is written ahead of the Node', async (t) => {
  const wanted = entry({ labels: { team: 'ml' }, taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }], cordon: true })
  const before = node()
  const [claim, write] = passes(cns([wanted], stored(record())), snap([before]), 2)
  t.test('a first pass records what it will write, and writes nothing', async (t) => {
    t.same(nodeActions(claim?.actions ?? []), [])
    t.same(
      claim?.status.nodes?.[0]?.applied,
      record({ labels: [...CELL_KEYS, 'team'].sort(), taints: [{ key: 'gpu', effect: 'NoSchedule' }], cordoned: true })
    )
    t.equal(claim?.status.observedGeneration, undefined, 'the spec is not carried out yet')
  })
  t.test('the next pass writes it', async (t) => {
    t.same(nodeActions(write?.actions ?? []), [
      {
        type: 'patchNode',
        name: 'pool-a-0',
        patch: {
          metadata: { resourceVersion: '7', labels: { team: 'ml' } },
          spec: { taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }], unschedulable: true }
        }
      }
    ])
  })
  t.test('a status write lost after the Node write loses nothing: the claim was stored before', async (t) => {
    const after = node({
      labels: { ...CELL_LABELS, team: 'ml' },
      taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
      unschedulable: true
    })
    const dropped = entry({ cordon: false })
    t.same(nodeActions(decide(cns([dropped], claim?.status), snap([after]), NOW).actions), [
      {
        type: 'patchNode',
        name: 'pool-a-0',
        patch: { metadata: { resourceVersion: '7', labels: { team: null } }, spec: { taints: [], unschedulable: null } }
      }
    ])
  })
  t.test('a key to remove stays recorded until it is seen gone', async (t) => {
    const removing = cns([entry()], stored(record({ labels: [...CELL_KEYS, 'team'].sort() })))
    const stillThere = decide(removing, snap([node({ labels: { ...CELL_LABELS, team: 'ml' } })]), NOW)
    t.same(stillThere.status.nodes?.[0]?.applied?.labels, [...CELL_KEYS, 'team'].sort())
    const gone = decide(removing, snap([node()]), NOW)
    t.same(gone.status.nodes?.[0]?.applied?.labels, CELL_KEYS)
  })
  t.test('a cordon someone else set before is never claimed', async (t) => {
    const [first, second] = passes(cns([entry({ cordon: true })], stored(record())), snap([node({ unschedulable: true })]), 2)
    t.equal(first?.status.nodes?.[0]?.applied?.cordoned, false)
    const released = decide(cns([entry({ cordon: false })], second?.status), snap([node({ unschedulable: true })]), NOW)
    t.same(nodeActions(released.actions), [], 'ending the drain leaves the admin cordon')
  })
})

t.test('the record is bounded: what it cannot hold, the agent does not write', async (t) => {
  const labels = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`example.com/k${String(i).padStart(3, '0')}`, 'v']))
  const long = `example.com/${'x'.repeat(400)}`
  const many = entry({
    labels: { ...labels, [long]: 'v' },
    annotations: Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`note-${i}`, 'v']))
  })
  const [decision] = passes(cns([many], stored(record())), snap([node()]), 1)
  const applied = decision?.status.nodes?.[0]?.applied
  t.equal(applied?.labels.length, 128, 'the cell labels and the first 123 others')
  t.ok(applied?.labels.includes('cells.kubeswift.io/instance'), 'the cell labels come first')
  t.notOk(applied?.labels.includes('example.com/k123'), 'the 124th of the entry is not')
  t.equal(applied?.annotations.length, 128)
  t.match(decision?.status.nodes?.[0]?.message, /label of 412 characters \(a key has at most 317\)/)
  t.match(decision?.status.nodes?.[0]?.message, /label example\.com\/k199 \(past 128 labels\)/)
  if (decision !== undefined) admitted(t, decision.status)
})

t.test('finding 4: only the Node object the agent adopted counts as the cell', async (t) => {
  const absentBefore: CellNodeSetStatus = { nodes: [{ name: 'pool-a-0', present: false }] }
  t.test('a Node that registered already carrying the guest instance label is not adopted, written or counted', async (t) => {
    const impostor = node({ labels: CELL_LABELS, taints: [] })
    const decisions = passes(
      cns([entry({ labels: { 'node-role.kubernetes.io/gpu-cell': '' }, taints: [{ key: 'gpu', effect: 'NoSchedule' }] })], absentBefore),
      snap([impostor]),
      3
    )
    for (const [i, d] of decisions.entries()) t.same(nodeActions(d.actions), [], `pass ${i + 1}: no role label, taint or instance written`)
    const row = decisions[2]?.status.nodes?.[0]
    t.equal(row?.instance, '', 'the row reports no instance: the pool hook does not count it as the cell')
    t.equal(row?.conflict, true)
    t.equal(row?.applied, undefined)
    t.match(row?.message, /the agent did not write it onto this Node object/)
  })
  t.test('... and once its kubelet stops heartbeating it is deleted as stale', async (t) => {
    const decision = decide(cns([entry()], absentBefore), snap([node({ beats: DEAD })]), NOW)
    t.same(nodeActions(decision.actions), [
      { type: 'deleteNode', name: 'pool-a-0', uid: 'uid-pool-a-0', resourceVersion: '7', reason: 'Stale', instance: GUEST }
    ])
  })
  t.test("the kubelet's own fresh registration is adopted, and then counted", async (t) => {
    const [first, second] = passes(cns([entry()], absentBefore), snap([node({ labels: REGISTERED })]), 2)
    t.equal(first?.status.nodes?.[0]?.instance, '', 'adopting: not counted yet')
    t.same(first?.status.nodes?.[0]?.applied, record())
    t.same(nodeActions(second?.actions ?? []), [
      { type: 'patchNode', name: 'pool-a-0', patch: { metadata: { labels: { 'cells.kubeswift.io/instance': GUEST } } } }
    ])
    const adopted = decide(cns([entry()], second?.status), snap([node()]), NOW)
    t.equal(adopted.status.nodes?.[0]?.instance, GUEST, 'counted once the label the agent wrote is on the Node object it recorded')
    t.equal(adopted.status.nodes?.[0]?.conflict, undefined)
  })
  t.test('a Node the agent adopted for an earlier guest is never adopted again, even without its instance label', async (t) => {
    const earlier = stored(record({ instance: 'uid-guest-old' }))
    const decision = decide(cns([entry()], earlier), snap([node({ labels: REGISTERED })]), NOW)
    t.same(nodeActions(decision.actions), [])
    t.equal(decision.status.nodes?.[0]?.conflict, true)
    t.match(decision.status.nodes?.[0]?.message, /uid-guest-old/)
  })
  t.test('the instance label is trusted once only where no record could exist yet', async (t) => {
    const cases: Array<{ name: string; status: CellNodeSetStatus | undefined; counted: boolean }> = [
      { name: 'no stored status (a new or recreated CellNodeSet)', status: undefined, counted: true },
      {
        name: 'a row an earlier release wrote, reporting this instance',
        status: { nodes: [{ name: 'pool-a-0', present: true, instance: GUEST }] },
        counted: true
      },
      { name: 'a row reporting the Node absent', status: absentBefore, counted: false },
      {
        name: 'a row reporting the Node without an instance',
        status: { nodes: [{ name: 'pool-a-0', present: true, instance: '' }] },
        counted: false
      },
      { name: 'a stored status without this row', status: { nodes: [] }, counted: false }
    ]
    for (const c of cases) {
      const row = decide(cns([entry()], c.status), snap([node()]), NOW).status.nodes?.[0]
      t.equal(row?.instance, c.counted ? GUEST : '', `${c.name}: ${c.counted ? 'counted' : 'not counted'}`)
    }
  })
})

t.test('a Node whose uid the record cannot hold is never adopted, so the status stays one the API server takes', async (t) => {
  for (const uid of ['', 'u'.repeat(129)]) {
    const decisions = passes(
      cns([entry()], { nodes: [{ name: 'pool-a-0', present: false }] }),
      snap([node({ uid, labels: REGISTERED })]),
      2
    )
    for (const d of decisions) {
      t.same(nodeActions(d.actions), [], `uid of ${uid.length} characters: nothing written`)
      t.equal(d.status.nodes?.[0]?.applied, undefined)
      admitted(t, d.status)
    }
  }
})

t.test('a Node carrying the pool uid under a name no cell has is not the pool', async (t) => {
  const stranger = (beats: NodeHeartbeats): ObservedNode =>
    node({ name: 'gpu-worker-7', labels: { 'cells.kubeswift.io/pool-uid': POOL_UID }, beats })
  for (const [name, beats] of [
    ['live', LIVE],
    ['not live', DEAD]
  ] as const) {
    const decision = decide(cns([entry()], stored(record())), snap([node(), stranger(beats)]), NOW)
    t.same(nodeActions(decision.actions), [], `${name}: never deleted or written`)
    t.equal(decision.status.nodeCount, 1, `${name}: not counted`)
    t.equal(decision.status.foreignNodes, 1, `${name}: reported`)
  }
  const orphan = node({ name: 'pool-a-7', labels: { ...CELL_LABELS, 'cells.kubeswift.io/cell': 'pool-a-7' }, beats: DEAD })
  t.same(
    nodeActions(decide(cns([entry()], stored(record())), snap([node(), orphan]), NOW).actions),
    [{ type: 'deleteNode', name: 'pool-a-7', uid: 'uid-pool-a-7', resourceVersion: '7', reason: 'Orphan', instance: GUEST }],
    "a cell name's orphan is still swept"
  )
})
