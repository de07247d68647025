import t from 'tap'
import {
  accessAddresses,
  instancePhase,
  instanceStatus,
  podAccelerator,
  readyCondition,
  specValidCondition,
  statusPorts,
  upToDateCondition,
  type StatusInput
} from '../../hooks/instance/status.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { EARLIER, NAME, NOW, NOW_STAMP, NS, POD_STATUS, observedPod, observedService } from './fixtures/instance.ts'
import { reversedKeys } from '../support/fields.ts'

/** A small observed Pod: `main` requesting a GPU. */
function pod(status: unknown, options: { node?: string; deleting?: boolean; resources?: Record<string, string> } = {}): KubeObject {
  const resources = options.resources ?? { cpu: '4', memory: '16Gi', 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '100' }
  return observedPod(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: NAME, namespace: NS },
      spec: { containers: [{ name: 'main', image: 'img', resources: { limits: resources, requests: resources } }] }
    },
    status,
    options
  )
}

const spec = {
  type: 'a100',
  image: 'img',
  ports: [
    { port: 8888, name: 'jupyter' },
    { port: 53, protocol: 'UDP' }
  ],
  resources: { accelerator: { count: 1 } }
}
const service = observedService([
  { port: 8888, nodePort: 31001 },
  { port: 53, protocol: 'UDP', nodePort: 31002 }
])

const input = (over: Partial<StatusInput> = {}): StatusInput => ({
  spec,
  generation: 3,
  previousConditions: undefined,
  now: NOW,
  finalizing: false,
  problems: [],
  pod: undefined,
  service: undefined,
  drift: { kind: 'None' },
  ...over
})
const problem = (reason: string, message: string) => ({ field: 'spec.x', reason, message })

const phases: Array<{ name: string; given: StatusInput; expected: { phase: string; message: string } }> = [
  {
    name: 'Deleting while finalizing, waiting for the Pod',
    given: input({ finalizing: true, pod: pod(POD_STATUS.running, { node: 'gpu-1' }), service }),
    expected: { phase: 'Deleting', message: 'Deleting: waiting for Pod ws to terminate.' }
  },
  {
    name: 'Deleting while finalizing, removing the Service',
    given: input({ finalizing: true, service }),
    expected: { phase: 'Deleting', message: 'Deleting: removing Service ws.' }
  },
  {
    name: 'Deleting while finalizing with nothing left',
    given: input({ finalizing: true }),
    expected: { phase: 'Deleting', message: 'Deleting: every child is gone.' }
  },
  {
    name: 'Stopping while stopped and a Pod is still observed',
    given: input({ spec: { ...spec, stop: true }, pod: pod(POD_STATUS.running, { node: 'gpu-1' }), service }),
    expected: { phase: 'Stopping', message: 'Stopping: waiting for Pod ws to terminate; Service ws keeps its node ports.' }
  },
  {
    name: 'Stopped when stopped and no Pod is observed',
    given: input({ spec: { ...spec, stop: true }, service }),
    expected: { phase: 'Stopped', message: 'Stopped; Service ws keeps its node ports.' }
  },
  {
    name: 'Stopped without a Service',
    given: input({ spec: { ...spec, stop: true } }),
    expected: { phase: 'Stopped', message: 'Stopped.' }
  },
  {
    name: 'Pending when no Pod exists yet',
    given: input(),
    expected: { phase: 'Pending', message: 'Waiting for the Pod to be created.' }
  },
  {
    name: 'Pending while the Pod is unscheduled, with the scheduler message',
    given: input({ pod: pod(POD_STATUS.pending) }),
    expected: { phase: 'Pending', message: 'Pod ws is waiting to be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' }
  },
  {
    name: 'Starting when scheduled (spec.nodeName set) but not ready',
    given: input({ pod: pod({ phase: 'Pending' }, { node: 'gpu-1' }) }),
    expected: { phase: 'Starting', message: 'Pod ws is starting on node gpu-1.' }
  },
  {
    name: 'Starting when PodScheduled is True, naming the waiting container',
    given: input({ pod: pod(POD_STATUS.pulling) }),
    expected: { phase: 'Starting', message: 'Pod ws is starting on node unknown: container main is waiting (ImagePullBackOff).' }
  },
  {
    name: 'Starting when Running but not Ready',
    given: input({
      pod: pod(
        {
          ...POD_STATUS.running,
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Ready', status: 'False' }
          ]
        },
        { node: 'gpu-1' }
      )
    }),
    expected: { phase: 'Starting', message: 'Pod ws is starting on node gpu-1.' }
  },
  {
    name: 'Running when the Pod is Running and Ready',
    given: input({ pod: pod(POD_STATUS.running, { node: 'gpu-1' }) }),
    expected: { phase: 'Running', message: 'Pod ws is running on node gpu-1.' }
  },
  {
    name: 'Pending while an observed Pod is being replaced',
    given: input({
      pod: pod(POD_STATUS.running, { node: 'gpu-1' }),
      replacing: 'it was built from generation 2 and the spec is at generation 3'
    }),
    expected: { phase: 'Pending', message: 'Replacing Pod ws: it was built from generation 2 and the spec is at generation 3.' }
  },
  {
    name: 'Failed on a spec error with no Pod',
    given: input({ problems: [problem('InstanceTypeNotFound', 'spec.type a100 names no InstanceType.'), problem('InvalidSpec', 'other')] }),
    expected: {
      phase: 'Failed',
      message: 'The Instance cannot run: spec.type a100 names no InstanceType (and 1 more, see condition SpecValid).'
    }
  },
  {
    name: 'a spec error with a kept Pod takes the phase from the Pod',
    given: input({ problems: [problem('SSHKeyMissing', 'no key')], pod: pod(POD_STATUS.running, { node: 'gpu-1' }) }),
    expected: { phase: 'Running', message: 'Pod ws is running on node gpu-1.' }
  },
  {
    name: 'a spec error with a kept Pod that ended is Failed',
    given: input({ problems: [problem('SSHKeyMissing', 'no key')], pod: pod(POD_STATUS.evicted, { node: 'gpu-1' }) }),
    expected: { phase: 'Failed', message: 'Pod ws ended with phase Failed (Evicted).' }
  },
  {
    name: 'stop decides the phase even with a spec error, since stop is acted on',
    given: input({ spec: { ...spec, stop: true }, problems: [problem('InvalidSpec', 'bad')] }),
    expected: { phase: 'Stopped', message: 'Stopped.' }
  },
  {
    name: 'a spec error without a Pod while running is Failed',
    given: input({ spec: { ...spec, stop: false }, problems: [problem('InvalidSpec', 'bad')] }),
    expected: { phase: 'Failed', message: 'The Instance cannot run: bad.' }
  }
]
for (const row of phases) {
  t.test(`phase: ${row.name}`, async (t) => {
    t.strictSame(instancePhase(row.given), row.expected)
  })
}

/** A container status of `name`, waiting with `reason` or running. */
const container = (name: string, waiting?: string): Record<string, unknown> => ({
  name,
  state: waiting === undefined ? { running: {} } : { waiting: { reason: waiting } }
})

/** Ready for the phase and Pod of each row; the message is the one passed in. */
const ready: Array<{
  name: string
  phase: Parameters<typeof readyCondition>[0]
  pod: Parameters<typeof readyCondition>[2]
  expected: { status: string; reason: string }
}> = [
  { name: 'Ready is True iff Running', phase: 'Running', pod: pod(POD_STATUS.running), expected: { status: 'True', reason: 'Running' } },
  {
    name: 'Ready takes ImagePullBackOff from the waiting container',
    phase: 'Starting',
    pod: pod(POD_STATUS.pulling),
    expected: { status: 'False', reason: 'ImagePullBackOff' }
  },
  {
    name: 'Ready takes CrashLoopBackOff from the waiting container',
    phase: 'Starting',
    pod: pod({ phase: 'Running', containerStatuses: [container('main', 'CrashLoopBackOff')] }),
    expected: { status: 'False', reason: 'CrashLoopBackOff' }
  },
  {
    name: 'Ready takes CreateContainerConfigError from a sidecar when main is not waiting',
    phase: 'Starting',
    pod: pod({ phase: 'Pending', containerStatuses: [container('sshd', 'CreateContainerConfigError'), container('main')] }),
    expected: { status: 'False', reason: 'CreateContainerConfigError' }
  },
  {
    name: 'Ready prefers the main container waiting reason',
    phase: 'Starting',
    pod: pod({ phase: 'Pending', containerStatuses: [container('sshd', 'ContainerCreating'), container('main', 'ErrImagePull')] }),
    expected: { status: 'False', reason: 'ErrImagePull' }
  },
  {
    name: 'Ready without a waiting container gives the phase as reason',
    phase: 'Pending',
    pod: undefined,
    expected: { status: 'False', reason: 'Pending' }
  },
  {
    name: 'Ready while stopping gives the phase even if a container waits',
    phase: 'Stopping',
    pod: pod(POD_STATUS.pulling),
    expected: { status: 'False', reason: 'Stopping' }
  }
]
for (const row of ready) {
  t.test(row.name, async (t) => {
    t.strictSame(readyCondition(row.phase, 'm', row.pod), { type: 'Ready', ...row.expected, message: 'm' })
  })
}

t.test('SpecValid is True with reason Valid when nothing is wrong', async (t) => {
  t.strictSame(specValidCondition([]), { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'The spec is valid.' })
})
t.test('SpecValid is False with the first reason and every message joined', async (t) => {
  t.strictSame(specValidCondition([problem('SSHKeyMissing', 'a.'), problem('ServiceNameTaken', 'b')]), {
    type: 'SpecValid',
    status: 'False',
    reason: 'SSHKeyMissing',
    message: 'a; b.'
  })
})

const upToDate: Array<{
  name: string
  given: Parameters<typeof upToDateCondition>[0]
  expected: { status: string; reason: string; message: string }
}> = [
  {
    name: 'UpToDate is True when the Pod matches',
    given: { kind: 'None', podName: 'ws' },
    expected: { status: 'True', reason: 'UpToDate', message: 'Pod ws matches the current spec, InstanceType and Settings.' }
  },
  {
    name: 'UpToDate is True without a Pod',
    given: { kind: 'None' },
    expected: { status: 'True', reason: 'UpToDate', message: 'No Pod runs; the next one is built from the current spec.' }
  },
  {
    name: 'UpToDate is False SpecChanged while an older Pod is replaced',
    given: { kind: 'SpecChanged', podName: 'ws', podGeneration: '2', generation: 3, held: false },
    expected: {
      status: 'False',
      reason: 'SpecChanged',
      message: 'Pod ws was built from generation 2, the spec is at generation 3; it is being replaced.'
    }
  },
  {
    name: 'UpToDate is False SpecChanged while a spec error holds an older Pod',
    given: { kind: 'SpecChanged', podName: 'ws', podGeneration: '2', generation: 3, held: true },
    expected: {
      status: 'False',
      reason: 'SpecChanged',
      message: 'Pod ws was built from generation 2, the spec is at generation 3; it is kept until the spec is valid.'
    }
  },
  {
    name: 'UpToDate is False InstanceTypeChanged after an admin edit of the type',
    given: { kind: 'InstanceTypeChanged', podName: 'ws', typeName: 'a100' },
    expected: {
      status: 'False',
      reason: 'InstanceTypeChanged',
      message: 'InstanceType a100 changed after Pod ws was built; the change applies at the next start (set spec.stop true, then false).'
    }
  },
  {
    name: 'UpToDate is False SettingChanged after the SSH image Setting changed',
    given: { kind: 'SettingChanged', podName: 'ws', setting: 'instance-ssh-server-image', was: 'sshd:1', now: 'sshd:2' },
    expected: {
      status: 'False',
      reason: 'SettingChanged',
      message:
        'Setting instance-ssh-server-image changed after Pod ws was built (it runs sshd:1, the Setting asks for sshd:2); the change applies at the next start.'
    }
  }
]
for (const row of upToDate) {
  t.test(row.name, async (t) => {
    t.strictSame(upToDateCondition(row.given), { type: 'UpToDate', ...row.expected })
  })
}

t.test('status.ports come from the observed Service, named by the spec, else <protocol>-<port>, or ssh', async (t) => {
  const svc = observedService([
    { port: 8888, nodePort: 31001 },
    { port: 53, protocol: 'UDP', nodePort: 31002 },
    { port: 22, name: 'ssh', nodePort: 30022 },
    { port: 7000 }
  ])
  t.strictSame(statusPorts(svc, spec), [
    { name: 'jupyter', port: 8888, protocol: 'TCP', nodePort: 31001 },
    { name: 'udp-53', port: 53, protocol: 'UDP', nodePort: 31002 },
    { name: 'ssh', port: 22, protocol: 'TCP', nodePort: 30022 },
    { name: 'tcp-7000', port: 7000, protocol: 'TCP' }
  ])
  t.strictSame(statusPorts(undefined, spec), [])
})

t.test('accessAddresses are <hostIP>:<nodePort>, IPv6 in brackets', async (t) => {
  const ports = [
    { name: 'a', port: 1, protocol: 'TCP', nodePort: 31001 },
    { name: 'b', port: 2, protocol: 'TCP' }
  ]
  t.strictSame(accessAddresses('192.0.2.7', ports), ['192.0.2.7:31001'])
  t.strictSame(accessAddresses('2001:db8::7', ports), ['[2001:db8::7]:31001'])
})

const accel: Array<{ name: string; given: [KubeObject, unknown]; expected: unknown }> = [
  {
    name: 'accelerator lists the main container extended resources with the spec family and count',
    given: [pod(POD_STATUS.running), { resources: { accelerator: { family: 'Whole', count: 1 } } }],
    expected: { family: 'Whole', count: 1, resources: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '100' } }
  },
  {
    name: 'accelerator defaults family Whole and count 1',
    given: [pod(POD_STATUS.running, { resources: { 'nvidia.com/gpu.shared': '1' } }), { resources: { accelerator: {} } }],
    expected: { family: 'Whole', count: 1, resources: { 'nvidia.com/gpu.shared': '1' } }
  },
  {
    name: 'accelerator is absent for a CPU-only Pod',
    given: [pod(POD_STATUS.running, { resources: { cpu: '1' } }), {}],
    expected: undefined
  }
]
for (const row of accel) {
  t.test(row.name, async (t) => {
    t.strictSame(podAccelerator(...row.given), row.expected)
  })
}

t.test('a running Instance reports pod facts, ports, access addresses, connect, accelerator and conditions', async (t) => {
  t.strictSame(
    instanceStatus(input({ pod: pod(POD_STATUS.running, { node: 'gpu-1' }), service, drift: { kind: 'None', podName: NAME } })),
    {
      phase: 'Running',
      message: 'Pod ws is running on node gpu-1.',
      podName: NAME,
      nodeName: 'gpu-1',
      podIP: '10.244.1.5',
      hostIP: '192.0.2.7',
      ports: [
        { name: 'jupyter', port: 8888, protocol: 'TCP', nodePort: 31001 },
        { name: 'udp-53', port: 53, protocol: 'UDP', nodePort: 31002 }
      ],
      nodePorts: '8888:31001/TCP,53:31002/UDP',
      accessAddresses: ['192.0.2.7:31001', '192.0.2.7:31002'],
      connect: {
        address: '192.0.2.7',
        ports: [
          { name: 'jupyter', port: 8888, protocol: 'TCP', endpoint: '192.0.2.7:31001' },
          { name: 'udp-53', port: 53, protocol: 'UDP', endpoint: '192.0.2.7:31002' }
        ]
      },
      accelerator: { family: 'Whole', count: 1, resources: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '100' } },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Running',
          message: 'Pod ws is running on node gpu-1.',
          lastTransitionTime: NOW_STAMP,
          observedGeneration: 3
        },
        {
          type: 'SpecValid',
          status: 'True',
          reason: 'Valid',
          message: 'The spec is valid.',
          lastTransitionTime: NOW_STAMP,
          observedGeneration: 3
        },
        {
          type: 'UpToDate',
          status: 'True',
          reason: 'UpToDate',
          message: 'Pod ws matches the current spec, InstanceType and Settings.',
          lastTransitionTime: NOW_STAMP,
          observedGeneration: 3
        }
      ],
      observedGeneration: 3
    }
  )
})

t.test('a stopped Instance omits pod facts and access addresses but reports its ports', async (t) => {
  const status = instanceStatus(input({ spec: { ...spec, stop: true }, service }))
  t.strictSame(Object.keys(status), ['phase', 'message', 'ports', 'nodePorts', 'conditions', 'observedGeneration'])
  t.notMatch(JSON.stringify(status), /null/)
})

t.test('accessAddresses are given only while the Pod runs', async (t) => {
  const status = instanceStatus(input({ pod: pod(POD_STATUS.pulling, { node: 'gpu-1' }), service }))
  t.equal(status.phase, 'Starting')
  t.equal(status.hostIP, '192.0.2.7')
  t.equal(status.accessAddresses, undefined)
})

t.test('lastTransitionTime is carried over while a condition keeps its status, and set to now when it changes', async (t) => {
  const previous = [
    { type: 'Ready', status: 'False', reason: 'Pending', message: 'x', lastTransitionTime: EARLIER },
    { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'x', lastTransitionTime: EARLIER }
  ]
  const status = instanceStatus(input({ previousConditions: previous, pod: pod(POD_STATUS.running, { node: 'gpu-1' }) }))
  t.strictSame(
    status.conditions?.map((c) => [c.type, c.lastTransitionTime]),
    [
      ['Ready', NOW_STAMP],
      ['SpecValid', EARLIER],
      ['UpToDate', NOW_STAMP]
    ]
  )
})

t.test('observedGeneration is the parent generation, omitted when unknown', async (t) => {
  t.equal(instanceStatus(input({ generation: 9 })).observedGeneration, 9)
  t.notOk('observedGeneration' in instanceStatus(input({ generation: undefined })))
})

t.test('the status bytes do not depend on the key order of what was observed', async (t) => {
  const given = input({ pod: pod(POD_STATUS.running, { node: 'gpu-1' }), service })
  const reordered = reversedKeys(given)
  t.not(JSON.stringify(reordered), JSON.stringify(given), 'the two inputs differ in key order')
  t.equal(JSON.stringify(instanceStatus(reordered)), JSON.stringify(instanceStatus(given)))
})
