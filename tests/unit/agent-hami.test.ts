import t from 'tap'
import {
  allocationsOf,
  parseRegistration,
  podDeviceCount,
  podDevices,
  type RegisteredDevices
} from '../../hooks/agent/nodeset/demand/hami.ts'
import type { CellDevice } from '../../hooks/api/cellnodeset.ts'

const A100 = 'NVIDIA-NVIDIA A100-SXM4-80GB'

const registrations: Array<{ name: string; given: string | undefined; expected: RegisteredDevices }> = [
  { name: 'no annotation is Missing', given: undefined, expected: { registration: 'Missing', devices: [] } },
  {
    name: 'the JSON array reads id, type, devmem, devcore and health',
    given: JSON.stringify([
      { id: 'GPU-a', count: 10, devmem: 81920, devcore: 100, type: A100, numa: 0, health: true, index: 0, mode: 'hami-core' }
    ]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: A100, memoryMiB: 81920, cores: 100, healthy: true }] }
  },
  {
    name: 'a JSON device without health (Go omits false) is unhealthy',
    given: JSON.stringify([{ id: 'GPU-a', devmem: 1024, devcore: 50, type: 'T' }]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: 'T', memoryMiB: 1024, cores: 50, healthy: false }] }
  },
  {
    name: 'a JSON device whose health is the string "true" is unhealthy',
    given: JSON.stringify([{ id: 'GPU-a', devmem: 1024, devcore: 50, type: 'T', health: 'true' }]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: 'T', memoryMiB: 1024, cores: 50, healthy: false }] }
  },
  { name: 'an empty JSON array is Parsed with no devices', given: '[]', expected: { registration: 'Parsed', devices: [] } },
  {
    name: 'records of 7 fields (uuid,count,mem,cores,type,numa,health)',
    given: `GPU-a,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:GPU-b,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,1,false:`,
    expected: {
      registration: 'Parsed',
      devices: [
        { id: 'GPU-a', type: 'NVIDIA-Tesla V100-PCIE-32GB', memoryMiB: 32768, cores: 100, healthy: true },
        { id: 'GPU-b', type: 'NVIDIA-Tesla V100-PCIE-32GB', memoryMiB: 32768, cores: 100, healthy: false }
      ]
    }
  },
  {
    name: 'records of 9 fields (plus index, mode)',
    given: `GPU-a,4,81920,100,${A100},0,true,0,hami-core:`,
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: A100, memoryMiB: 81920, cores: 100, healthy: true }] }
  },
  {
    name: 'records of 8 fields are Unparseable',
    given: `GPU-a,4,81920,100,${A100},0,true,0:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a record with a non-numeric memory is Unparseable',
    given: `GPU-a,4,lots,100,${A100},0,true:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a record with a memory past 2^53 - 1 is Unparseable: the status could not hold it',
    given: `GPU-a,4,99999999999999999999,100,${A100},0,true:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a JSON device with a devmem past 2^53 - 1 is Unparseable',
    given: '[{"id":"a","devmem":99999999999999999999}]',
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a record with a health that is not a Go bool is Unparseable',
    given: `GPU-a,4,1,100,${A100},0,yes:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  { name: 'garbage text is Unparseable', given: 'hello world', expected: { registration: 'Unparseable', devices: [] } },
  { name: 'a JSON object (not an array) is Unparseable', given: '{"id":"GPU-a"}', expected: { registration: 'Unparseable', devices: [] } },
  { name: 'a JSON device without id is Unparseable', given: '[{"devmem":1}]', expected: { registration: 'Unparseable', devices: [] } },
  {
    name: 'a JSON device with a fractional devmem is Unparseable',
    given: '[{"id":"a","devmem":1.5}]',
    expected: { registration: 'Unparseable', devices: [] }
  },
  { name: 'the empty string is Unparseable', given: '', expected: { registration: 'Unparseable', devices: [] } }
]

for (const c of registrations) {
  t.test(c.name, async (t) => {
    t.same(parseRegistration(c.given), c.expected)
  })
}

const podAnnotations: Array<{ name: string; given: string | undefined; expected: number | undefined }> = [
  { name: 'an absent Pod annotation names no device', given: undefined, expected: 0 },
  { name: 'one container, one device', given: 'GPU-a,NVIDIA,3000,30:;', expected: 1 },
  {
    name: 'two devices in one container and one in another',
    given: 'GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;GPU-c,NVIDIA,1,1:;',
    expected: 3
  },
  { name: 'the device plugin\'s emptied value ";" names no device', given: ';', expected: 0 },
  { name: 'an emptied value for two containers ";;" names no device', given: ';;', expected: 0 },
  { name: 'a device with too few fields does not decode', given: 'GPU-a,NVIDIA:;', expected: undefined },
  { name: 'a device with a non-numeric memory does not decode', given: 'GPU-a,NVIDIA,x,30:;', expected: undefined }
]

for (const c of podAnnotations) {
  t.test(c.name, async (t) => {
    t.equal(podDeviceCount(c.given), c.expected)
  })
}

t.test('a Pod annotation decodes to the device ids it names', async (t) => {
  t.same(podDevices('GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,1,1:;GPU-c,NVIDIA,1,1:;'), ['GPU-a', 'GPU-b', 'GPU-c'])
  t.same(podDevices(';'), [])
  t.equal(podDevices('junk'), undefined)
})

t.test('allocations', async (t) => {
  const ALLOCATED = 'hami.io/vgpu-devices-allocated'
  const TO_ALLOCATE = 'hami.io/vgpu-devices-to-allocate'
  const NODE = 'pool-a-0'
  /** The cell's one registered device, GPU-a. */
  const DEVICES: CellDevice[] = [{ id: 'GPU-a', type: 'NVIDIA', memoryMiB: 81920, cores: 100, healthy: true }]
  const device = 'GPU-a,NVIDIA,1000,10:;'
  /** A Pod in `phase` with these annotations, bound to the cell's Node by spec.nodeName. */
  const onNode = (annotations: Record<string, string>, phase = 'Running') => ({
    metadata: { name: 'p', annotations },
    spec: { nodeName: NODE },
    status: { phase }
  })
  /** A pending, unbound Pod annotated (hami.io/vgpu-node) for `node`, as HAMi's scheduler does or as anyone may. */
  const annotatedFor = (node: string, annotations: Record<string, string>) => ({
    metadata: { name: 'p', namespace: 'anyone', annotations: { 'hami.io/vgpu-node': node, ...annotations } },
    spec: {},
    status: { phase: 'Pending' }
  })
  const NONE = { read: true, pods: 0, inFlight: false }
  const ONE = { read: true, pods: 1, inFlight: false }
  const UNREAD = { read: false, pods: 0, inFlight: false }
  const cases: Array<{
    name: string
    bound?: unknown[]
    unbound?: unknown[]
    boundRead?: boolean
    unboundRead?: boolean
    devices?: CellDevice[]
    expected: { read: boolean; pods: number; inFlight: boolean }
  }> = [
    { name: 'a Pod bound by spec.nodeName with a device counts', bound: [onNode({ [ALLOCATED]: device })], expected: ONE },
    {
      name: 'a Pod HAMi annotated for the Node before binding counts when it names a device of the Node',
      unbound: [annotatedFor(NODE, { [ALLOCATED]: device })],
      expected: ONE
    },
    {
      name: 'an unbound Pod naming the Node with an annotation that decodes to nothing pins nothing',
      unbound: [annotatedFor(NODE, { [ALLOCATED]: 'junk', [TO_ALLOCATE]: 'junk' })],
      expected: NONE
    },
    {
      name: 'an unbound Pod naming the Node and a device the Node does not have pins nothing',
      unbound: [annotatedFor(NODE, { [ALLOCATED]: 'GPU-z,NVIDIA,1000,10:;', [TO_ALLOCATE]: 'GPU-z,NVIDIA,1000,10:;' })],
      expected: NONE
    },
    {
      name: 'an unbound Pod naming a Node without a registration pins nothing',
      unbound: [annotatedFor(NODE, { [ALLOCATED]: device })],
      devices: [],
      expected: NONE
    },
    {
      name: 'an unbound Pod naming the Node without an allocation annotation pins nothing',
      unbound: [annotatedFor(NODE, {})],
      expected: NONE
    },
    {
      name: 'a Pod annotated for another Node does not count',
      unbound: [annotatedFor('pool-a-1', { [ALLOCATED]: device })],
      expected: NONE
    },
    { name: 'a Succeeded Pod does not count', bound: [onNode({ [ALLOCATED]: device }, 'Succeeded')], expected: NONE },
    { name: 'a Failed Pod does not count', bound: [onNode({ [ALLOCATED]: device }, 'Failed')], expected: NONE },
    { name: 'a Pod without the allocated annotation does not count', bound: [onNode({})], expected: NONE },
    { name: 'an allocated annotation with no device (";") does not count', bound: [onNode({ [ALLOCATED]: ';' })], expected: NONE },
    {
      name: 'a bound Pod whose allocated annotation does not decode counts (a drain waits rather than guesses)',
      bound: [onNode({ [ALLOCATED]: 'junk' })],
      expected: ONE
    },
    {
      name: 'a Pod listed with the Node but bound elsewhere does not count',
      bound: [{ ...onNode({ [ALLOCATED]: device }), spec: { nodeName: 'pool-a-1' } }],
      expected: NONE
    },
    {
      name: 'to-allocate naming a device of the Node is in flight',
      unbound: [annotatedFor(NODE, { [TO_ALLOCATE]: device })],
      expected: { read: true, pods: 0, inFlight: true }
    },
    {
      name: 'to-allocate left as ";" by the device plugin is not in flight',
      bound: [onNode({ [ALLOCATED]: device, [TO_ALLOCATE]: ';' })],
      expected: ONE
    },
    { name: "a failed list of the Node's Pods is read: false", boundRead: false, expected: UNREAD },
    { name: 'a failed list of pending Pods is read: false', unboundRead: false, expected: UNREAD }
  ]
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const bound = { read: c.boundRead ?? true, items: c.bound ?? [] }
      const unbound = { read: c.unboundRead ?? true, items: c.unbound ?? [] }
      t.same(allocationsOf(NODE, c.devices ?? DEVICES, bound, unbound), c.expected)
    })
  }
})

t.test('what a compromised cell can make the agent copy from its registration is bounded', async (t) => {
  const device = (id: string, type = 'NVIDIA') => ({ id, type, devmem: 1, devcore: 1, health: true })
  const many = Array.from({ length: 65 }, (_, i) => device(`GPU-${i}`))
  t.same(parseRegistration(JSON.stringify(many)), { registration: 'Unparseable', devices: [] }, 'more than 64 devices is garbage')
  t.equal(parseRegistration(JSON.stringify(many.slice(0, 64))).devices.length, 64)
  t.same(parseRegistration(JSON.stringify([device('G'.repeat(129))])), { registration: 'Unparseable', devices: [] }, 'an id past 128')
  t.equal(parseRegistration(`${'G'.repeat(129)},1,1,1,NVIDIA,0,true:`).registration, 'Unparseable')
  const typed = parseRegistration(JSON.stringify([device('GPU-a', 'T'.repeat(100_000))]))
  t.equal(typed.registration, 'Parsed')
  t.equal(typed.devices[0]?.type.length, 128, 'a long type is clipped')
  const records = parseRegistration(Array.from({ length: 65 }, (_, i) => `GPU-${i},1,1,1,NVIDIA,0,true`).join(':'))
  t.equal(records.registration, 'Unparseable')
})
