import t from 'tap'
import { demandStatus, readDemand, type Demand } from '../../hooks/agent/nodeset/demand/demand.ts'
import { parseQuantity, saturatingAdd, wholeQuantity } from '../../hooks/agent/nodeset/demand/quantity.ts'
import { CellNodeSetStatusSchema } from '../../hooks/api/cellnodeset.ts'
import { Value } from '@sinclair/typebox/value'
import type { CellNodeSetSpec } from '../../hooks/api/cellnodeset.ts'

type DemandSpec = NonNullable<CellNodeSetSpec['demand']>

const SPEC: DemandSpec = {
  resources: ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'],
  nodeLabels: { 'gpu.pool': 'a100', zone: 'z1', rank: '5' },
  taints: [
    { key: 'gpu', value: 'true', effect: 'NoSchedule' },
    { key: 'soft', effect: 'PreferNoSchedule' }
  ]
}
/** What the default Pod's one container asks for: a slice of one GPU. */
const GPU_SLICE = { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000', 'nvidia.com/gpucores': '30' } }

/**
 * A pending, unschedulable Pod whose container `main` asks for `resources` (by default a GPU slice that
 * fits the pool) and which tolerates the pool's NoSchedule taint; `spec` and `status` fields replace the defaults.
 */
function pod(o: { resources?: unknown; spec?: Record<string, unknown>; status?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    metadata: { name: 'p', namespace: 'ns' },
    spec: {
      containers: [{ name: 'main', resources: o.resources ?? GPU_SLICE }],
      tolerations: [{ key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
      ...o.spec
    },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }], ...o.status }
  }
}

/** Pod spec fields for a required node affinity of these terms (ORed). */
const required = (...nodeSelectorTerms: unknown[]) => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } }
})

type Counted = Omit<Demand, 'unreadablePods' | 'unrunnablePods'>

const ONE: Counted = { pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 3000, cores: 30, pods: 1 }] }
const NONE: Counted = { pendingPods: 0, shapes: [] }

const cases: Array<{ name: string; given: unknown[]; expected: Counted }> = [
  { name: 'a pending unschedulable Pod that fits counts', given: [pod()], expected: ONE },
  { name: 'a Pod with a nodeName does not count', given: [pod({ spec: { nodeName: 'n1' } })], expected: NONE },
  { name: 'a Pod not Pending does not count', given: [pod({ status: { phase: 'Running' } })], expected: NONE },
  { name: 'a Pod without PodScheduled=False does not count', given: [pod({ status: { conditions: [] } })], expected: NONE },
  {
    name: 'a Pod unscheduled for another reason (SchedulingGated) does not count',
    given: [pod({ status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] } })],
    expected: NONE
  },
  { name: 'a Pod asking for no demand resource does not count', given: [pod({ resources: { limits: { cpu: '1' } } })], expected: NONE },
  {
    name: 'requests count when there are no limits',
    given: [pod({ resources: { requests: { 'nvidia.com/gpu': '2' } } })],
    expected: { pendingPods: 1, shapes: [{ devices: 2, memoryMiB: 0, cores: 0, pods: 1 }] }
  },
  {
    name: 'limits win over requests',
    given: [pod({ resources: { limits: { 'nvidia.com/gpu': '2' }, requests: { 'nvidia.com/gpu': '1' } } })],
    expected: { pendingPods: 1, shapes: [{ devices: 2, memoryMiB: 0, cores: 0, pods: 1 }] }
  },
  {
    name: 'init containers are ignored',
    given: [pod({ resources: {}, spec: { initContainers: [{ name: 'init', resources: { limits: { 'nvidia.com/gpu': '1' } } }] } })],
    expected: NONE
  },
  {
    name: 'containers are summed per Pod',
    given: [
      pod({
        spec: {
          containers: [
            { name: 'main', resources: GPU_SLICE },
            { name: 'b', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1000' } } }
          ]
        }
      })
    ],
    expected: { pendingPods: 1, shapes: [{ devices: 2, memoryMiB: 4000, cores: 30, pods: 1 }] }
  },
  {
    name: 'a nodeSelector the pool labels satisfy counts',
    given: [pod({ spec: { nodeSelector: { 'gpu.pool': 'a100' } } })],
    expected: ONE
  },
  {
    name: 'a nodeSelector on a label the pool lacks does not count',
    given: [pod({ spec: { nodeSelector: { 'gpu.pool': 'h100' } } })],
    expected: NONE
  },
  {
    name: 'required affinity In on a pool label counts',
    given: [pod({ spec: required({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1', 'z2'] }] }) })],
    expected: ONE
  },
  {
    name: 'required affinity NotIn on the pool value does not count',
    given: [pod({ spec: required({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['z1'] }] }) })],
    expected: NONE
  },
  {
    name: 'required affinity terms are ORed: one matching term is enough',
    given: [
      pod({
        spec: required(
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z9'] }] },
          { matchExpressions: [{ key: 'rank', operator: 'Gt', values: ['3'] }] }
        )
      })
    ],
    expected: ONE
  },
  {
    name: 'required affinity DoesNotExist on a pool label does not count',
    given: [pod({ spec: required({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }) })],
    expected: NONE
  },
  {
    name: 'required affinity on a Node name (matchFields) does not count: a new Node has another name',
    given: [pod({ spec: required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['elsewhere'] }] }) })],
    expected: NONE
  },
  {
    name: 'preferred affinity alone does not filter',
    given: [
      pod({
        spec: {
          affinity: {
            nodeAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                { weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z9'] }] } }
              ]
            }
          }
        }
      })
    ],
    expected: ONE
  },
  {
    name: 'a Pod that does not tolerate the pool NoSchedule taint does not count',
    given: [pod({ spec: { tolerations: [] } })],
    expected: NONE
  },
  {
    name: 'a toleration with another value does not tolerate',
    given: [pod({ spec: { tolerations: [{ key: 'gpu', operator: 'Equal', value: 'false', effect: 'NoSchedule' }] } })],
    expected: NONE
  },
  {
    name: 'an Exists toleration without key tolerates everything',
    given: [pod({ spec: { tolerations: [{ operator: 'Exists' }] } })],
    expected: ONE
  },
  {
    name: 'an Exists toleration for the key tolerates it',
    given: [pod({ spec: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] } })],
    expected: ONE
  },
  {
    name: 'a toleration for another effect does not tolerate',
    given: [pod({ spec: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoExecute' }] } })],
    expected: NONE
  },
  {
    name: 'shapes group identical requests, largest first',
    given: [
      pod(),
      pod(),
      pod({ resources: { limits: { 'nvidia.com/gpu': '2' } } }),
      pod({ resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8000' } } })
    ],
    expected: {
      pendingPods: 4,
      shapes: [
        { devices: 2, memoryMiB: 0, cores: 0, pods: 1 },
        { devices: 1, memoryMiB: 8000, cores: 0, pods: 1 },
        { devices: 1, memoryMiB: 3000, cores: 30, pods: 2 }
      ]
    }
  },
  {
    name: 'a Pod asking only for memory gets one device, as HAMi gives it',
    given: [pod({ resources: { limits: { 'nvidia.com/gpumem': '2000' } } })],
    expected: { pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 2000, cores: 0, pods: 1 }] }
  },
  { name: 'garbage entries are skipped', given: [null, 'x', 7, { spec: 'no' }, pod()], expected: ONE }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.same(readDemand(c.given, SPEC), { ...c.expected, unreadablePods: 0, unrunnablePods: 0 })
  })
}

t.test('at most 50 shapes, while pendingPods counts every Pod', async (t) => {
  const pods = Array.from({ length: 60 }, (_, i) =>
    pod({ resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': String(1000 + i) } } })
  )
  const demand = readDemand(pods, SPEC)
  t.equal(demand.pendingPods, 60)
  t.equal(demand.shapes.length, 50)
  t.same(demand.shapes[0], { devices: 1, memoryMiB: 1059, cores: 0, pods: 1 })
})

t.test('quantities read with suffixes; nonsense reads as nothing', async (t) => {
  t.equal(parseQuantity('2'), 2)
  t.equal(parseQuantity('1k'), 1000)
  t.equal(parseQuantity('1Ki'), 1024)
  t.equal(parseQuantity('1e3'), 1000)
  t.equal(parseQuantity('2E-3'), 0.002)
  t.equal(parseQuantity('500m'), 0.5)
  t.equal(parseQuantity(3), 3)
  t.equal(parseQuantity('1Xi'), undefined)
  t.equal(parseQuantity('abc'), undefined)
  t.equal(parseQuantity('1e9999'), undefined, 'an exponent past three digits is no quantity')
  t.equal(parseQuantity('9'.repeat(400)), undefined, 'text past 64 characters is no quantity')
  t.equal(parseQuantity(Infinity), undefined)
})

t.test('whole quantities round up, and stop at 2^53 - 1', async (t) => {
  t.equal(wholeQuantity('1.1', 1e-3), 1100, 'floating point does not add a millicore')
  t.equal(wholeQuantity('1500m'), 2)
  t.equal(wholeQuantity('9007199254740991'), 9007199254740991)
  t.equal(wholeQuantity('9007199254740993'), undefined)
  t.equal(wholeQuantity('9223372036854775807'), undefined)
  t.equal(wholeQuantity('-1'), undefined)
  t.equal(saturatingAdd(9007199254740991, 1), 9007199254740991)
  t.equal(saturatingAdd(2, 3), 5)
})

t.test('a Pod asking for more than 2^53 - 1 is not demand but counted as unreadable', async (t) => {
  const huge = pod({ resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '9223372036854775807' } } })
  t.same(readDemand([huge, pod()], SPEC), { ...ONE, unreadablePods: 1, unrunnablePods: 0 })
})

t.test('quantities that do not read or are negative make the Pod unreadable, not demand', async (t) => {
  const given = [
    pod({ resources: { limits: { 'nvidia.com/gpu': 'lots' } } }),
    pod({ resources: { requests: { 'nvidia.com/gpumem': '-5' } } }),
    pod({ resources: { limits: { 'nvidia.com/gpucores': { value: 1 } } } }),
    // Limits name the resource: what they say decides, a readable request does not stand in for it.
    pod({ resources: { limits: { 'nvidia.com/gpu': '1x' }, requests: { 'nvidia.com/gpu': '1' } } })
  ]
  t.same(readDemand(given, SPEC), { pendingPods: 0, shapes: [], unreadablePods: 4, unrunnablePods: 0 })
})

t.test('an unreadable Pod that would not land on the pool is not counted at all', async (t) => {
  const elsewhere = pod({ resources: { limits: { 'nvidia.com/gpu': 'lots' } }, spec: { nodeSelector: { 'gpu.pool': 'h100' } } })
  t.same(readDemand([elsewhere], SPEC), { pendingPods: 0, shapes: [], unreadablePods: 0, unrunnablePods: 0 })
})

t.test('sums over containers saturate at 2^53 - 1', async (t) => {
  const near = { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '9007199254740000' } }
  const given = [
    pod({
      spec: {
        containers: [
          { name: 'a', resources: near },
          { name: 'b', resources: near }
        ]
      }
    })
  ]
  t.same(readDemand(given, SPEC), {
    pendingPods: 1,
    shapes: [{ devices: 2, memoryMiB: 9007199254740991, cores: 0, pods: 1 }],
    unreadablePods: 0,
    unrunnablePods: 0
  })
})

t.test('the demand status of a hostile Pod passes the CellNodeSet schema', async (t) => {
  const huge = pod({ resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '9223372036854775807' } } })
  const big = { limits: { 'nvidia.com/gpu': '9007199254740991', 'nvidia.com/gpumem': '9007199254740991' } }
  const sum = pod({
    spec: {
      containers: [
        { name: 'a', resources: big },
        { name: 'b', resources: big }
      ]
    }
  })
  const demand = demandStatus({ read: true, items: [huge, sum] }, SPEC)
  t.equal(demand.unreadablePods, 1)
  const figures = (demand.shapes ?? []).flatMap((s) => [s.devices, s.memoryMiB, s.cores, s.pods])
  t.ok(
    figures.length > 0 && figures.every((n) => Number.isSafeInteger(n)),
    'every figure an integer the API server and JavaScript both hold'
  )
  t.ok(Value.Check(CellNodeSetStatusSchema, { demand }), 'within the schema the API server enforces')
})
