/**
 * Instances on an InstanceType with `devicePlugin: DRA` (docs/dra.md, "Instances"; docs/instance.md,
 * "DRA"): the ResourceClaimTemplate per family, the Pod's claim in `main` only, the errors for what
 * a type cannot serve, `status.accelerator.claim`, and the template's life across stop, start, an
 * edit and deletion. Expectations are written out from the design, never produced by the code.
 */
import t from 'tap'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'
import { claimDevices, mebibytes } from '../../hooks/instance/claim.ts'
import { INSTANCE_CHILD_RULE } from '../../hooks/instance/answer-rule.ts'
import { finalize } from '../../hooks/instance/finalize.ts'
import { sync } from '../../hooks/instance/sync.ts'
import { typeProblems } from '../../hooks/instance/validate.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { answerViolations } from '../../hooks/metacontroller/answer-guard.ts'
import type { InstanceSpec } from '../../hooks/api/instance.ts'
import { PRIVILEGED } from '../support/instance-requests.ts'
import {
  InstanceWorld,
  NOW,
  POD_STATUS,
  applied,
  baseSpec,
  instance,
  instanceType,
  keySecret,
  namespaceObject,
  observedPod,
  request
} from './fixtures/instance.ts'

const NVIDIA_DRA: InstanceTypeSpec = {
  devicePlugin: 'DRA',
  dra: { deviceClassName: 'gpu.nvidia.com', partitionDeviceClassName: 'mig.nvidia.com' },
  families: ['Whole', 'Shared', 'Partitioned'],
  partitionProfiles: ['1g.10gb', '3g.40gb']
}
const HAMI_DRA: InstanceTypeSpec = {
  devicePlugin: 'DRA',
  dra: { deviceClassName: 'hami-core-gpu.project-hami.io', sharedDeviceClassName: 'hami-core-gpu.project-hami.io' },
  families: ['Whole', 'Sliced']
}
const draRelated = (spec: InstanceTypeSpec = NVIDIA_DRA): KubeObject[] => [instanceType(spec), namespaceObject()]
const accelerated = (accelerator: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  baseSpec({ resources: { accelerator }, ...extra })

const kinds = (children: KubeObject[]) => children.map((c) => `${c.kind} ${c.metadata.name}`)
const findKind = (children: KubeObject[], kind: string) => children.find((c) => c.kind === kind)

t.test('each family becomes one request named gpu on the class the type names for it', async (t) => {
  t.strictSame(claimDevices({ family: 'Whole', count: 2 }, NVIDIA_DRA), {
    requests: [{ name: 'gpu', exactly: { allocationMode: 'ExactCount', count: 2, deviceClassName: 'gpu.nvidia.com' } }]
  })
  t.strictSame(claimDevices({ family: 'Shared', count: 1 }, NVIDIA_DRA), {
    requests: [{ name: 'gpu', exactly: { allocationMode: 'ExactCount', count: 1, deviceClassName: 'gpu.nvidia.com' } }],
    config: [
      {
        opaque: {
          driver: 'gpu.nvidia.com',
          parameters: { apiVersion: 'resource.nvidia.com/v1beta1', kind: 'GpuConfig', sharing: { strategy: 'TimeSlicing' } }
        },
        requests: ['gpu']
      }
    ]
  })
  const mps = claimDevices({ family: 'Shared', count: 1 }, { ...NVIDIA_DRA, dra: { ...NVIDIA_DRA.dra, sharing: 'MPS' } })
  t.strictSame(
    (mps.config?.[0]?.opaque as { parameters: { sharing: unknown } }).parameters.sharing,
    { strategy: 'MPS' },
    'the type may name MPS'
  )
  t.strictSame(claimDevices({ family: 'Sliced', count: 1, memoryMiB: 8192, coresPercentage: 30 }, HAMI_DRA), {
    requests: [
      {
        name: 'gpu',
        exactly: {
          allocationMode: 'ExactCount',
          count: 1,
          deviceClassName: 'hami-core-gpu.project-hami.io',
          capacity: { requests: { cores: '30', memory: '8Gi' } }
        }
      }
    ]
  })
  t.strictSame(
    claimDevices({ family: 'Sliced', count: 1, memoryMiB: 1024 }, HAMI_DRA).requests[0]?.exactly,
    {
      allocationMode: 'ExactCount',
      count: 1,
      deviceClassName: 'hami-core-gpu.project-hami.io',
      capacity: { requests: { cores: '100', memory: '1Gi' } }
    },
    'an absent coresPercentage means 100'
  )
  t.strictSame(
    claimDevices({ family: 'Whole', count: 1 }, HAMI_DRA).requests[0]?.exactly,
    { allocationMode: 'ExactCount', count: 1, deviceClassName: 'hami-core-gpu.project-hami.io' },
    'a whole HAMi device is a request without capacity'
  )
  t.strictSame(claimDevices({ family: 'Partitioned', count: 1, profile: '1g.10gb' }, NVIDIA_DRA), {
    requests: [
      {
        name: 'gpu',
        exactly: {
          allocationMode: 'ExactCount',
          count: 1,
          deviceClassName: 'mig.nvidia.com',
          selectors: [{ cel: { expression: 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"' } }]
        }
      }
    ]
  })
})

t.test('memory is written as the API server stores the quantity, so Recreate finds nothing to replace', async (t) => {
  t.strictSame([1, 1000, 1024, 1536, 8192, 23028, 1048576, 1073741824 * 1024].map(mebibytes), [
    '1Mi',
    '1000Mi',
    '1Gi',
    '1536Mi',
    '8Gi',
    '23028Mi',
    '1Ti',
    '1Ei'
  ])
})

t.test('a family the type has no class for, and a memory percentage, are errors naming the field', async (t) => {
  const problems = (spec: Record<string, unknown>, type: InstanceTypeSpec) =>
    typeProblems(spec as unknown as InstanceSpec, 'gpu', type).map((p) => [p.field, p.reason, p.message])
  t.strictSame(problems(accelerated({ family: 'Sliced', memoryMiB: 1024 }), { ...NVIDIA_DRA, families: ['Sliced'] }), [
    [
      'spec.resources.accelerator.family',
      'AcceleratorNotOffered',
      'spec.resources.accelerator.family Sliced cannot be served by InstanceType gpu: it has devicePlugin DRA and no ' +
        'spec.dra.sharedDeviceClassName, the DeviceClass Sliced is allocated from; an admin must set it'
    ]
  ])
  t.strictSame(
    problems(accelerated({ family: 'Partitioned', profile: '1g.10gb' }), {
      ...HAMI_DRA,
      families: ['Partitioned'],
      partitionProfiles: ['1g.10gb']
    }),
    [
      [
        'spec.resources.accelerator.family',
        'AcceleratorNotOffered',
        'spec.resources.accelerator.family Partitioned cannot be served by InstanceType gpu: it has devicePlugin DRA and no ' +
          'spec.dra.partitionDeviceClassName, the DeviceClass Partitioned is allocated from; an admin must set it'
      ]
    ]
  )
  t.strictSame(problems(accelerated({ count: 1 }), { devicePlugin: 'DRA' }), [
    [
      'spec.resources.accelerator.family',
      'AcceleratorNotOffered',
      'spec.resources.accelerator.family Whole cannot be served by InstanceType gpu: it has devicePlugin DRA and no ' +
        'spec.dra.deviceClassName, the DeviceClass Whole is allocated from; an admin must set it'
    ]
  ])
  t.strictSame(problems(accelerated({ family: 'Sliced', memoryPercentage: 25 }), HAMI_DRA), [
    [
      'spec.resources.accelerator.memoryPercentage',
      'AcceleratorNotOffered',
      'spec.resources.accelerator.memoryPercentage is not offered by InstanceType gpu: with devicePlugin DRA a ' +
        "device's memory is a capacity in bytes, not a percentage; set memoryMiB"
    ]
  ])
  t.strictSame(problems(accelerated({ family: 'Sliced', memoryMiB: 1024 }), HAMI_DRA), [], 'Sliced by memoryMiB is served')
  t.strictSame(problems(baseSpec(), { devicePlugin: 'DRA' }), [], 'a CPU-only Instance needs no class')
})

t.test('a DRA Instance: the Pod names its template in resourceClaims, main lists the claim, no extended resource', async (t) => {
  const answer = sync(
    request({ parent: instance(accelerated({ count: 2 }, { resources: { accelerator: { count: 2 }, cpu: '2' } })), related: draRelated() }),
    NOW
  )
  t.strictSame(kinds(answer.children), ['Pod ws', 'ResourceClaimTemplate ws-accelerator'])
  const pod = findKind(answer.children, 'Pod') as KubeObject & { spec: Record<string, any> }
  t.strictSame(pod.spec.resourceClaims, [{ name: 'accelerator', resourceClaimTemplateName: 'ws-accelerator' }])
  t.strictSame(pod.spec.containers[0].resources, { claims: [{ name: 'accelerator' }], limits: { cpu: '2' }, requests: { cpu: '2' } })
  const template = findKind(answer.children, 'ResourceClaimTemplate') as KubeObject
  t.strictSame(template.apiVersion, 'resource.k8s.io/v1')
  t.strictSame(template.metadata.namespace, 'team-a')
  t.strictSame(template.metadata.labels, { 'app.kubernetes.io/part-of': 'ws', 'app.kubernetes.io/managed-by': 'gpuhooks' })
  t.strictSame(template.spec, {
    spec: {
      devices: { requests: [{ name: 'gpu', exactly: { allocationMode: 'ExactCount', count: 2, deviceClassName: 'gpu.nvidia.com' } }] }
    }
  })
  t.match(template.metadata.annotations, { 'worker.gpustack.ai/claim-template-hash': /^[0-9a-f]+$/ })
  t.strictSame(answerViolations(INSTANCE_CHILD_RULE, request(), answer), [], 'the answer passes the guard')

  const onlyMain = sync(request({ parent: instance(accelerated({ count: 1 })), related: draRelated() }), NOW)
  t.strictSame((findKind(onlyMain.children, 'Pod')?.spec as any).containers[0].resources, { claims: [{ name: 'accelerator' }] })
})

t.test('the SSH sidecar lists no claim: it sees what main sees', async (t) => {
  const spec = accelerated({ count: 1 }, { sshPublicKey: { name: 'keys' } })
  const answer = sync(
    request({
      parent: instance(spec),
      related: [instanceType(NVIDIA_DRA), namespaceObject(PRIVILEGED), keySecret('keys')]
    }),
    NOW
  )
  const pod = findKind(answer.children, 'Pod') as KubeObject & { spec: Record<string, any> }
  const sshd = pod.spec.containers.find((c: { name: string }) => c.name === 'sshd')
  t.ok(sshd, 'the sidecar is there')
  t.equal(sshd.resources?.claims, undefined)
  t.strictSame(
    Object.keys(sshd.resources?.limits ?? {}).filter((k: string) => k.includes('/')),
    [],
    'no visibility resource'
  )
})

t.test('a CPU-only Instance on a DRA type gets no template and no claim', async (t) => {
  const answer = sync(request({ parent: instance(baseSpec()), related: draRelated() }), NOW)
  t.strictSame(kinds(answer.children), ['Pod ws'])
  t.equal((findKind(answer.children, 'Pod')?.spec as any).resourceClaims, undefined)
})

t.test('a type without the class of the family: no Pod and no template, the status names the field', async (t) => {
  const answer = sync(
    request({
      parent: instance(accelerated({ family: 'Sliced', memoryMiB: 512 })),
      related: draRelated({ ...NVIDIA_DRA, families: ['Sliced'] })
    }),
    NOW
  )
  t.strictSame(answer.children, [])
  t.match(answer.status, { phase: 'Failed', message: /spec\.dra\.sharedDeviceClassName/ })
})

t.test('status.accelerator.claim names the ResourceClaim the Pod status gives for its claim accelerator', async (t) => {
  const first = sync(request({ parent: instance(accelerated({ count: 1 })), related: draRelated() }), NOW)
  const pod = findKind(first.children, 'Pod') as KubeObject
  const running = observedPod(
    pod,
    { ...POD_STATUS.running, resourceClaimStatuses: [{ name: 'accelerator', resourceClaimName: 'ws-accelerator-x7k2p' }] },
    { node: 'gpu-1' }
  )
  const answer = sync(request({ parent: instance(accelerated({ count: 1 })), children: [running], related: draRelated() }), NOW)
  t.strictSame(answer.status.accelerator, { family: 'Whole', count: 1, resources: {}, claim: 'ws-accelerator-x7k2p' })
  const pending = observedPod(pod, POD_STATUS.pending)
  const before = sync(request({ parent: instance(accelerated({ count: 1 })), children: [pending], related: draRelated() }), NOW)
  t.strictSame(before.status.accelerator, { family: 'Whole', count: 1, resources: {} }, 'no claim before the Pod status names one')
  const odd = observedPod(pod, {
    ...POD_STATUS.running,
    resourceClaimStatuses: [{ name: 'other', resourceClaimName: 'x' }, 'junk', { name: 'accelerator', resourceClaimName: 7 }]
  })
  const oddAnswer = sync(request({ parent: instance(accelerated({ count: 1 })), children: [odd], related: draRelated() }), NOW)
  t.strictSame(oddAnswer.status.accelerator, { family: 'Whole', count: 1, resources: {} }, 'stored entries of any shape are skipped')
})

t.test('stop keeps the template and the Service and frees the device with the Pod; start takes one again', async (t) => {
  const world = new InstanceWorld(accelerated({ count: 1 }, { ports: [{ port: 8888 }] }), { related: draRelated() })
  world.settle(sync)
  const template = world.claimTemplate()
  t.ok(template, 'the template exists')
  t.ok(world.pod(), 'the Pod exists')
  world.edit({ stop: true })
  world.settle(sync)
  t.equal(world.pod(), undefined, 'the Pod is gone, and its claim with it')
  t.equal(world.claimTemplate()?.metadata.uid, template?.metadata.uid, 'the same template is kept')
  world.edit({ stop: false })
  world.settle(sync)
  t.ok(world.pod(), 'start makes a new Pod')
  t.strictSame((world.pod()?.spec as any).resourceClaims, [{ name: 'accelerator', resourceClaimTemplateName: 'ws-accelerator' }])
})

t.test('an edit of the accelerator replaces the template before a new Pod is made from it', async (t) => {
  const world = new InstanceWorld(accelerated({ count: 1 }), { related: draRelated() })
  world.settle(sync)
  const old = world.claimTemplate()
  world.edit({ resources: { accelerator: { count: 2 } } })
  // Pass 1: the old Pod is left out; the template differs, so Metacontroller deletes it (Recreate).
  world.pass(sync)
  t.equal(world.pod(), undefined, 'the outdated Pod is deleted')
  t.equal(world.claimTemplate(), undefined, 'the outdated template is deleted')
  world.settle(sync)
  const now = world.claimTemplate() as KubeObject & { spec: any }
  t.not(now.metadata.uid, old?.metadata.uid, 'a new template')
  t.equal(now.spec.spec.devices.requests[0].exactly.count, 2)
  t.ok(world.pod(), 'the new Pod')
})

t.test('no new Pod is made while an outdated template is still observed', async (t) => {
  const first = sync(request({ parent: instance(accelerated({ count: 1 })), related: draRelated() }), NOW)
  const oldTemplate = applied(findKind(first.children, 'ResourceClaimTemplate') as KubeObject)
  const answer = sync(
    request({ parent: instance(accelerated({ count: 2 }), { generation: 2 }), children: [oldTemplate], related: draRelated() }),
    NOW
  )
  t.strictSame(kinds(answer.children), ['ResourceClaimTemplate ws-accelerator'], 'the new template only')
  t.equal((answer.children[0] as unknown as { spec: any }).spec.spec.devices.requests[0].exactly.count, 2)
  const current = applied(answer.children[0] as KubeObject)
  const next = sync(
    request({ parent: instance(accelerated({ count: 2 }), { generation: 2 }), children: [current], related: draRelated() }),
    NOW
  )
  t.strictSame(kinds(next.children), ['Pod ws', 'ResourceClaimTemplate ws-accelerator'], 'with the current template the Pod is made')
})

t.test('a spec error keeps the observed template as it is', async (t) => {
  const first = sync(request({ parent: instance(accelerated({ count: 1 })), related: draRelated() }), NOW)
  const children = first.children.map((c) => applied(c))
  const answer = sync(
    request({ parent: instance({ ...accelerated({ count: 1 }), image: '' }, { generation: 2 }), children, related: draRelated() }),
    NOW
  )
  t.strictSame(kinds(answer.children).sort(), ['Pod ws', 'ResourceClaimTemplate ws-accelerator'])
  const kept = findKind(answer.children, 'ResourceClaimTemplate') as KubeObject
  const observed = findKind(children, 'ResourceClaimTemplate') as KubeObject
  t.strictSame(kept.spec, observed.spec, 'the spec as observed')
  t.strictSame(
    kept.metadata.annotations?.['worker.gpustack.ai/claim-template-hash'],
    observed.metadata.annotations?.['worker.gpustack.ai/claim-template-hash']
  )
})

t.test('finalize deletes the template and finishes only when no template is observed', async (t) => {
  const first = sync(request({ parent: instance(accelerated({ count: 1 })), related: draRelated() }), NOW)
  const template = applied(findKind(first.children, 'ResourceClaimTemplate') as KubeObject)
  const answer = finalize(
    request({
      parent: instance(accelerated({ count: 1 }), { deleting: true }),
      children: [template],
      related: draRelated(),
      finalizing: true
    }),
    NOW
  )
  t.strictSame(answer.children, [])
  t.equal(answer.finalized, false, 'the template is still observed')
  const done = finalize(
    request({ parent: instance(accelerated({ count: 1 }), { deleting: true }), related: draRelated(), finalizing: true }),
    NOW
  )
  t.equal(done.finalized, true)
})

t.test('the template is the same bytes for the same input', async (t) => {
  const a = sync(request({ parent: instance(accelerated({ family: 'Partitioned', profile: '3g.40gb' })), related: draRelated() }), NOW)
  const b = sync(request({ parent: instance(accelerated({ family: 'Partitioned', profile: '3g.40gb' })), related: draRelated() }), NOW)
  t.equal(JSON.stringify(a.children), JSON.stringify(b.children))
})
