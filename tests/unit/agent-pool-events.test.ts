/**
 * Which Events a pass tells about its pool, from the CellNodeSet's status before and after it:
 * a drain started and finished, a drain called off, a Node swept, the workload cluster lost
 * and regained. Each row names the change; a status that does not change tells nothing, so an
 * unchanged pool never repeats an Event.
 */
import t from 'tap'
import type { CellNode, CellNodeSetStatus, CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import { poolEvents, type PoolEvent } from '../../hooks/agent/nodeset/decide/pool-events.ts'

const entry = (name: string, cordon = false): CellNode => ({ name, instance: `uid-${name}`, cordon })
const row = (name: string, more: Partial<CellNodeStatus> = {}): CellNodeStatus => ({
  name,
  present: true,
  ready: true,
  unschedulable: false,
  allocations: { read: true, pods: 1 },
  ...more
})
const reachable = (reason: string, message = ''): CellNodeSetStatus['conditions'] => [
  { type: 'Reachable', status: reason === 'Reachable' ? 'True' : 'False', reason, message, lastTransitionTime: '2026-06-01T00:00:00Z' }
]

const rows: { name: string; nodes: CellNode[]; before: CellNodeSetStatus | undefined; after: CellNodeSetStatus; expected: PoolEvent[] }[] =
  [
    {
      name: 'nothing changed: no Event',
      nodes: [entry('p-0'), entry('p-1', true)],
      before: { conditions: reachable('Reachable'), nodes: [row('p-0'), row('p-1', { unschedulable: true })] },
      after: { conditions: reachable('Reachable'), nodes: [row('p-0'), row('p-1', { unschedulable: true })] },
      expected: []
    },
    {
      name: 'a first pass that reads the workload cluster tells nothing',
      nodes: [entry('p-0')],
      before: undefined,
      after: { conditions: reachable('Reachable'), nodes: [row('p-0')] },
      expected: []
    },
    {
      name: 'the drain starts: the Node the spec cordons is cordoned, with its GPU Pods counted',
      nodes: [entry('p-0', true)],
      before: { nodes: [row('p-0', { allocations: { read: true, pods: 2 } })] },
      after: { nodes: [row('p-0', { unschedulable: true, allocations: { read: true, pods: 2 } })] },
      expected: [{ type: 'Normal', reason: 'DrainStarted', message: "Node p-0 is cordoned for its cell's drain; 2 GPU Pods run on it." }]
    },
    {
      name: 'the drain finishes: the cordoned Node holds no GPU Pod and none is being placed',
      nodes: [entry('p-0', true)],
      before: { nodes: [row('p-0', { unschedulable: true, allocations: { read: true, pods: 1 } })] },
      after: { nodes: [row('p-0', { unschedulable: true, allocations: { read: true, pods: 0 } })] },
      expected: [{ type: 'Normal', reason: 'DrainFinished', message: 'Node p-0 holds no GPU Pod any more: its cell can be removed.' }]
    },
    {
      name: 'an idle Node drains in one pass: started, then finished',
      nodes: [entry('p-0', true)],
      before: { nodes: [row('p-0', { allocations: { read: true, pods: 0 } })] },
      after: { nodes: [row('p-0', { unschedulable: true, allocations: { read: true, pods: 0 } })] },
      expected: [
        { type: 'Normal', reason: 'DrainStarted', message: "Node p-0 is cordoned for its cell's drain; 0 GPU Pods run on it." },
        { type: 'Normal', reason: 'DrainFinished', message: 'Node p-0 holds no GPU Pod any more: its cell can be removed.' }
      ]
    },
    {
      name: 'not finished while a Pod is being given a device, or while the Pods are not listed',
      nodes: [entry('p-0', true), entry('p-1', true)],
      before: { nodes: [row('p-0', { unschedulable: true }), row('p-1', { unschedulable: true })] },
      after: {
        nodes: [
          row('p-0', { unschedulable: true, allocations: { read: true, pods: 0, inFlight: true } }),
          row('p-1', { unschedulable: true, allocations: { read: false, pods: 0 } })
        ]
      },
      expected: []
    },
    {
      name: "the Pods of a Node cordoned before they could be listed: 'not listed yet'",
      nodes: [entry('p-0', true)],
      before: { nodes: [row('p-0')] },
      after: { nodes: [row('p-0', { unschedulable: true, allocations: { read: false, pods: 0 } })] },
      expected: [
        { type: 'Normal', reason: 'DrainStarted', message: "Node p-0 is cordoned for its cell's drain; its GPU Pods are not listed yet." }
      ]
    },
    {
      name: 'a Node cordoned by someone else (the spec does not cordon it) starts no drain',
      nodes: [entry('p-0')],
      before: { nodes: [row('p-0')] },
      after: { nodes: [row('p-0', { unschedulable: true, allocations: { read: true, pods: 0 } })] },
      expected: []
    },
    {
      name: 'a drain called off: the Node is schedulable again',
      nodes: [entry('p-0')],
      before: { nodes: [row('p-0', { unschedulable: true })] },
      after: { nodes: [row('p-0')] },
      expected: [{ type: 'Normal', reason: 'Uncordoned', message: 'Node p-0 is schedulable again.' }]
    },
    {
      name: 'a Node gone says nothing about its drain (its sweep does)',
      nodes: [entry('p-0')],
      before: { nodes: [row('p-0', { unschedulable: true })] },
      after: { nodes: [{ name: 'p-0', present: false }] },
      expected: []
    },
    {
      name: 'a Node swept: one Event per new row of swept, none for those already there',
      nodes: [],
      before: { swept: [{ name: 'p-3', instance: 'uid-old', reason: 'Orphan', time: '2026-06-01T00:00:00Z' }] },
      after: {
        swept: [
          { name: 'p-3', instance: 'uid-old', reason: 'Orphan', time: '2026-06-01T00:00:00Z' },
          { name: 'p-1', instance: 'uid-a', reason: 'Stale', time: '2026-06-01T01:00:00Z' },
          { name: 'p-2', reason: 'Orphan', time: '2026-06-01T01:00:00Z' }
        ]
      },
      expected: [
        {
          type: 'Normal',
          reason: 'NodeSwept',
          message:
            'Deleted Node p-1 (instance uid-a) from the workload cluster: Stale, a previous VM registered under the cell name, no longer heartbeating.'
        },
        {
          type: 'Normal',
          reason: 'NodeSwept',
          message:
            'Deleted Node p-2 from the workload cluster: Orphan, no cell of the pool names it any more and its kubelet stopped heartbeating.'
        }
      ]
    },
    {
      name: 'the same Node name swept again later (a new VM gone too) is a new Event',
      nodes: [],
      before: { swept: [{ name: 'p-1', instance: 'uid-a', reason: 'Stale', time: '2026-06-01T00:00:00Z' }] },
      after: {
        swept: [
          { name: 'p-1', instance: 'uid-a', reason: 'Stale', time: '2026-06-01T00:00:00Z' },
          { name: 'p-1', instance: 'uid-b', reason: 'Stale', time: '2026-06-01T02:00:00Z' }
        ]
      },
      expected: [
        {
          type: 'Normal',
          reason: 'NodeSwept',
          message:
            'Deleted Node p-1 (instance uid-b) from the workload cluster: Stale, a previous VM registered under the cell name, no longer heartbeating.'
        }
      ]
    },
    {
      name: 'the workload cluster lost',
      nodes: [],
      before: { conditions: reachable('Reachable') },
      after: { conditions: reachable('Unreachable', 'connect ECONNREFUSED 10.0.0.1:6443') },
      expected: [
        {
          type: 'Warning',
          reason: 'WorkloadClusterUnreachable',
          message:
            'The workload cluster cannot be read (Unreachable): connect ECONNREFUSED 10.0.0.1:6443. The pool holds still until it can.'
        }
      ]
    },
    {
      name: 'never reached since the CellNodeSet was made: told on the first pass',
      nodes: [],
      before: undefined,
      after: { conditions: reachable('CredentialInvalid', 'the Secret ns/wl has no key value') },
      expected: [
        {
          type: 'Warning',
          reason: 'WorkloadClusterUnreachable',
          message:
            'The workload cluster cannot be read (CredentialInvalid): the Secret ns/wl has no key value. The pool holds still until it can.'
        }
      ]
    },
    {
      name: 'still lost for the same reason: nothing new, whatever the error text says now',
      nodes: [],
      before: { conditions: reachable('Unreachable', 'timeout after 10 s') },
      after: { conditions: reachable('Unreachable', 'connect ECONNREFUSED') },
      expected: []
    },
    {
      name: 'lost for another reason: told again, with the new reason',
      nodes: [],
      before: { conditions: reachable('Unreachable', 'timeout') },
      after: { conditions: reachable('Forbidden', 'nodes is forbidden.') },
      expected: [
        {
          type: 'Warning',
          reason: 'WorkloadClusterUnreachable',
          message: 'The workload cluster cannot be read (Forbidden): nodes is forbidden. The pool holds still until it can.'
        }
      ]
    },
    {
      name: 'a condition without a message: the reason alone',
      nodes: [],
      before: { conditions: reachable('Reachable') },
      after: { conditions: reachable('Unreachable') },
      expected: [
        {
          type: 'Warning',
          reason: 'WorkloadClusterUnreachable',
          message: 'The workload cluster cannot be read (Unreachable). The pool holds still until it can.'
        }
      ]
    },
    {
      name: 'the workload cluster regained',
      nodes: [],
      before: { conditions: reachable('Unreachable', 'timeout') },
      after: { conditions: reachable('Reachable') },
      expected: [
        { type: 'Normal', reason: 'WorkloadClusterReachable', message: 'The workload cluster is read again (it was Unreachable).' }
      ]
    }
  ]

for (const r of rows) {
  t.test(r.name, async (t) => {
    t.same(poolEvents(r.nodes, r.before, r.after), r.expected)
  })
}

t.test('a pass whose after becomes the next before tells nothing more: never a loop of Events', async (t) => {
  for (const r of rows) t.same(poolEvents(r.nodes, r.after, r.after), [], r.name)
})

t.test('Events come in a fixed order: reachability, then Nodes by name, then sweeps', async (t) => {
  const events = poolEvents(
    [entry('p-1', true), entry('p-0', true)],
    { conditions: reachable('Unreachable', 'x'), nodes: [row('p-0'), row('p-1')] },
    {
      conditions: reachable('Reachable'),
      nodes: [row('p-1', { unschedulable: true }), row('p-0', { unschedulable: true })],
      swept: [{ name: 'p-9', reason: 'Orphan', time: '2026-06-01T00:00:00Z' }]
    }
  )
  t.same(
    events.map((e) => e.reason + (e.message.startsWith('Node ') ? ` ${e.message.split(' ')[1] ?? ''}` : '')),
    ['WorkloadClusterReachable', 'DrainStarted p-0', 'DrainStarted p-1', 'NodeSwept']
  )
})
