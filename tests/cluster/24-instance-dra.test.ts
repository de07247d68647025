/**
 * DRA Instances allocated by the real kube-scheduler (docs/dra.md, "Instances"; docs/instance.md,
 * "DRA"): no kubelet, two Node objects and ResourceSlices written in the shapes NVIDIA's DRA
 * driver (k8s-dra-driver-gpu: whole GPUs of type gpu, MIG devices of type mig with their profile)
 * and HAMi's (hami-core-gpu.project-hami.io: one device per GPU with consumable cores and memory)
 * publish, with a DeviceClass of each. The hook renders each Instance's ResourceClaimTemplate; the
 * resourceclaim controller of kube-controller-manager makes the Pod's claim from it; the scheduler
 * allocates a device and binds the Pod. Checked: Whole, Shared, Partitioned on the profile's MIG
 * device, two Sliced Instances sharing one device by consumed capacity, a third that does not fit
 * staying Pending with the scheduler's reason in its status until a stop frees capacity.
 * The test plays the kubelet where a Pod bound to a node must go: it force-deletes it.
 */
import t from 'tap'
import { eventually } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { driveInstance } from './support/node-drive.ts'
import { reader, refs } from './support/reads.ts'
import type { ResourceRef } from './support/kube.ts'
import type { JsonObject } from '../support/merge.ts'

const env = await startScenario({ cluster: { scheduler: true, extraControllers: ['resourceclaim-controller'] } })
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { get, must } = reader<Obj>(kube)
const NS = 'dra'
const RESOURCE = 'resource.k8s.io/v1'
const ref = (resource: string, name?: string, namespace?: string): ResourceRef => ({
  apiVersion: RESOURCE,
  resource,
  ...(namespace === undefined ? {} : { namespace }),
  ...(name === undefined ? {} : { name })
})

/** A Node object with room for Pods and no taint; there is no kubelet behind it. */
async function createNode(name: string): Promise<void> {
  await kube.create(
    { apiVersion: 'v1', resource: 'nodes' },
    { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } }
  )
  const node = await must({ apiVersion: 'v1', resource: 'nodes', name })
  const room = { cpu: '16', memory: '64Gi', pods: '110' }
  node.status = {
    capacity: room,
    allocatable: room,
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'no kubelet: a test Node' }]
  }
  await kube.updateStatus({ apiVersion: 'v1', resource: 'nodes', name }, node)
  // The API server taints a new Node not-ready until its kubelet reports; with none, the test
  // lifts it (no node lifecycle controller runs to put it back).
  await kube.patch({ apiVersion: 'v1', resource: 'nodes', name }, { spec: { taints: null } }, 'merge')
}

const text = (value: string) => ({ string: value })
const version = (value: string) => ({ version: value })

const gpuUuid = (minor: number) => `GPU-4a3c1f6e-0000-4000-8000-00000000000${minor}`
/** What k8s-dra-driver-gpu publishes of the board for a GPU and for each of its MIG devices alike. */
const boardAttributes = (minor: number) => ({
  productName: text('NVIDIA A100-SXM4-80GB'),
  brand: text('Nvidia'),
  architecture: text('Ampere'),
  cudaComputeCapability: version('8.0.0'),
  driverVersion: version('550.54.15'),
  cudaDriverVersion: version('12.4.0'),
  pcieBusID: text(`0000:0${minor}:00.0`),
  addressingMode: text('None')
})

/** A whole GPU as k8s-dra-driver-gpu's GpuInfo.GetDevice publishes it. */
function nvidiaGpu(minor: number): JsonObject {
  return {
    name: `gpu-${minor}`,
    attributes: { type: text('gpu'), uuid: text(gpuUuid(minor)), ...boardAttributes(minor) },
    capacity: { memory: { value: '80Gi' } }
  }
}

/** A MIG device as MigDeviceInfo.GetDevice publishes it: gpu-<minor>-mig-<profile id>-<start>-<size>. */
function nvidiaMig(minor: number, profile: string, profileId: number, start: number, size: number, memoryGi: number): JsonObject {
  const slices = Object.fromEntries(Array.from({ length: size }, (_, i) => [`memorySlice${start + i}`, { value: '1' }]))
  return {
    name: `gpu-${minor}-mig-${profileId}-${start}-${size}`,
    attributes: {
      type: text('mig'),
      uuid: text(`MIG-7d1e0b52-0000-4000-8000-0000000${profileId}${start}${size}`),
      parentUUID: text(gpuUuid(minor)),
      profile: text(profile),
      ...boardAttributes(minor)
    },
    capacity: {
      multiprocessors: { value: String(size * 14) },
      copyEngines: { value: String(size) },
      decoders: { value: String(Math.floor(size / 2)) },
      encoders: { value: '0' },
      jpegEngines: { value: '0' },
      ofaEngines: { value: '0' },
      memory: { value: `${memoryGi}Gi` },
      ...slices
    }
  }
}

/** One GPU as HAMi's DRA driver publishes it: capacities cores and memory, shared between claims. */
const hamiGpu: JsonObject = {
  name: 'hami-gpu-0',
  attributes: {
    type: text('hami-gpu'),
    uuid: text('GPU-f1c7d08c-ae21-13e7-0de0-9eb14ff71eaf'),
    productName: text('NVIDIA A10'),
    brand: text('Nvidia'),
    architecture: text('Ampere'),
    minor: { int: 0 },
    cudaComputeCapability: version('8.6.0'),
    driverVersion: version('550.144.3'),
    cudaDriverVersion: version('12.4.0'),
    pcieBusID: text('0000:65:01.0')
  },
  capacity: { cores: { value: '100' }, memory: { value: '23028Mi' } },
  allowMultipleAllocations: true
}

function slice(node: string, driverName: string, devices: JsonObject[]): JsonObject {
  return {
    apiVersion: RESOURCE,
    kind: 'ResourceSlice',
    metadata: { name: `${node}-${driverName}` },
    spec: { driver: driverName, nodeName: node, pool: { name: node, generation: 1, resourceSliceCount: 1 }, devices }
  }
}

function deviceClass(name: string, expression: string): JsonObject {
  return { apiVersion: RESOURCE, kind: 'DeviceClass', metadata: { name }, spec: { selectors: [{ cel: { expression } }] } }
}

function instanceType(name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'InstanceType', metadata: { name }, spec }
}

const WORKSPACE = { image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'] }
async function createInstance(name: string, type: string, accelerator: JsonObject): Promise<void> {
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace: NS },
    spec: { type, ...WORKSPACE, resources: { accelerator } }
  })
}

/** The Pod of `name` bound by the scheduler, with its claim: read until both are there. */
async function scheduled(name: string): Promise<{ pod: Obj; claim: Obj; instance: Obj; template: Obj }> {
  const instance = await driveInstance(
    env,
    { namespace: NS, name },
    'scheduled with its claim',
    (i) => i.status?.accelerator?.claim !== undefined && i.status?.nodeName !== undefined,
    90_000
  )
  const pod = await must(refs.pod(NS, name))
  const claim = await eventually(`the claim of ${name} to be allocated`, async () => {
    const c = await get(ref('resourceclaims', instance.status.accelerator.claim, NS))
    return c?.status?.allocation === undefined ? undefined : c
  })
  const template = await must(ref('resourceclaimtemplates', `${name}-accelerator`, NS))
  return { pod, claim, instance, template }
}

/** The allocation results of a claim, as `driver pool device request`. */
const results = (claim: Obj): string[] =>
  (claim.status.allocation.devices.results as Obj[]).map((r) => `${r.driver} ${r.pool} ${r.device} ${r.request}`)

/** The kubelet's part when a bound Pod is deleted: confirm it, so it goes. */
async function kubeletRemoves(name: string): Promise<void> {
  await eventually(`Pod ${name} to be marked for deletion`, async () => {
    const pod = await get(refs.pod(NS, name))
    return pod === undefined || pod.metadata.deletionTimestamp !== undefined ? true : undefined
  })
  await cluster.kubectl(['delete', 'pod', name, '-n', NS, '--grace-period=0', '--force', '--ignore-not-found'])
}

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', NS])
  await cluster.kubectl(['wait', '--for=create', '-n', NS, 'serviceaccount/default', '--timeout=60s'])
  await createNode('gpu-nvidia')
  await createNode('gpu-hami')
  // The classes as the drivers' charts ship them: by driver and device type.
  await kube.create(
    ref('deviceclasses'),
    deviceClass('gpu.nvidia.com', "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'")
  )
  await kube.create(
    ref('deviceclasses'),
    deviceClass('mig.nvidia.com', "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'")
  )
  await kube.create(ref('deviceclasses'), deviceClass('hami-core-gpu.project-hami.io', "device.driver == 'hami-core-gpu.project-hami.io'"))
  await kube.create(
    ref('resourceslices'),
    slice('gpu-nvidia', 'gpu.nvidia.com', [
      nvidiaGpu(0),
      nvidiaGpu(1),
      nvidiaMig(2, '1g.10gb', 19, 0, 1, 10),
      nvidiaMig(2, '3g.40gb', 9, 4, 4, 40)
    ])
  )
  await kube.create(ref('resourceslices'), slice('gpu-hami', 'hami-core-gpu.project-hami.io', [hamiGpu]))
  await apply(
    cluster,
    instanceType('nvidia-dra', {
      devicePlugin: 'DRA',
      dra: { deviceClassName: 'gpu.nvidia.com', partitionDeviceClassName: 'mig.nvidia.com' },
      families: ['Whole', 'Shared', 'Partitioned'],
      partitionProfiles: ['1g.10gb', '3g.40gb']
    })
  )
  await apply(
    cluster,
    instanceType('hami-dra', {
      devicePlugin: 'DRA',
      dra: { deviceClassName: 'hami-core-gpu.project-hami.io', sharedDeviceClassName: 'hami-core-gpu.project-hami.io' },
      families: ['Whole', 'Sliced']
    })
  )
})

t.test('Whole: a whole GPU of NVIDIA’s class, the claim made from the Instance’s template', async (t) => {
  await createInstance('whole', 'nvidia-dra', { count: 1 })
  const { pod, claim, instance } = await scheduled('whole')
  const template = await must(ref('resourceclaimtemplates', 'whole-accelerator', NS))
  t.same(
    template.metadata.ownerReferences.map((r: Obj) => [r.kind, r.name, r.controller]),
    [['Instance', 'whole', true]],
    'the template is the Instance’s child'
  )
  t.same(pod.spec.resourceClaims, [{ name: 'accelerator', resourceClaimTemplateName: 'whole-accelerator' }])
  t.same(pod.spec.containers[0].resources, { claims: [{ name: 'accelerator' }] })
  t.equal(pod.spec.nodeName, 'gpu-nvidia', 'bound to the node whose slice has the device')
  t.equal(claim.metadata.annotations['resource.kubernetes.io/pod-claim-name'], 'accelerator')
  t.same(results(claim).length, 1)
  t.match(results(claim)[0], /^gpu\.nvidia\.com gpu-nvidia gpu-[01] gpu$/, 'a whole GPU, not a MIG device')
  t.same(
    claim.status.reservedFor.map((r: Obj) => [r.resource, r.name]),
    [['pods', 'whole']]
  )
  t.equal(instance.status.accelerator.claim, claim.metadata.name, 'status.accelerator.claim names it')
  t.equal(instance.status.phase, 'Starting', 'bound, and no kubelet to start it')
})

t.test('Shared: a whole GPU with NVIDIA’s sharing config in the claim', async (t) => {
  await createInstance('shared', 'nvidia-dra', { family: 'Shared', count: 1 })
  const { claim } = await scheduled('shared')
  t.match(results(claim)[0], /^gpu\.nvidia\.com gpu-nvidia gpu-[01] gpu$/)
  const whole = await must(ref('resourceclaims', (await must(refs.instance(NS, 'whole'))).status.accelerator.claim, NS))
  t.not(results(claim)[0], results(whole)[0], 'another GPU than the Whole Instance’s')
  t.same(claim.spec.devices.config, [
    {
      requests: ['gpu'],
      opaque: {
        driver: 'gpu.nvidia.com',
        parameters: { apiVersion: 'resource.nvidia.com/v1beta1', kind: 'GpuConfig', sharing: { strategy: 'TimeSlicing' } }
      }
    }
  ])
  t.same(
    claim.status.allocation.devices.config?.map((c: Obj) => [c.source, c.opaque.driver]),
    [['FromClaim', 'gpu.nvidia.com']],
    'the config goes with the allocation'
  )
})

t.test('Partitioned: the MIG device of the profile, chosen by the profile attribute', async (t) => {
  await createInstance('mig', 'nvidia-dra', { family: 'Partitioned', profile: '3g.40gb' })
  const { claim } = await scheduled('mig')
  t.same(results(claim), ['gpu.nvidia.com gpu-nvidia gpu-2-mig-9-4-4 gpu'])
  await createInstance('mig-small', 'nvidia-dra', { family: 'Partitioned', profile: '1g.10gb' })
  const small = await scheduled('mig-small')
  t.same(results(small.claim), ['gpu.nvidia.com gpu-nvidia gpu-2-mig-19-0-1 gpu'])
})

t.test('Sliced: two Instances share one HAMi device by consumed capacity; a third waits for room', async (t) => {
  await createInstance('slice-a', 'hami-dra', { family: 'Sliced', memoryMiB: 8192, coresPercentage: 30 })
  await createInstance('slice-b', 'hami-dra', { family: 'Sliced', memoryMiB: 8192, coresPercentage: 30 })
  const a = await scheduled('slice-a')
  const b = await scheduled('slice-b')
  for (const [name, got] of [
    ['slice-a', a],
    ['slice-b', b]
  ] as const) {
    t.equal(got.pod.spec.nodeName, 'gpu-hami', `${name} on the HAMi node`)
    t.same(results(got.claim), ['hami-core-gpu.project-hami.io gpu-hami hami-gpu-0 gpu'], `${name} on the one device`)
    const consumed = got.claim.status.allocation.devices.results[0].consumedCapacity
    t.equal(consumed.cores, '30', `${name} consumes 30 cores`)
    t.equal(consumed.memory, '8Gi', `${name} consumes 8 GiB`)
  }
  const shareA = a.claim.status.allocation.devices.results[0].shareID
  const shareB = b.claim.status.allocation.devices.results[0].shareID
  t.ok(typeof shareA === 'string' && typeof shareB === 'string' && shareA !== shareB, 'two shares of one device')

  // 16 GiB of 23028 MiB taken: 8 GiB more does not fit, though 30 more cores would.
  await createInstance('slice-c', 'hami-dra', { family: 'Sliced', memoryMiB: 8192, coresPercentage: 30 })
  const waiting = await driveInstance(
    env,
    { namespace: NS, name: 'slice-c' },
    'Pending with the scheduler’s reason',
    (i) => i.status?.phase === 'Pending' && /waiting to be scheduled: /.test(i.status?.message ?? ''),
    90_000
  )
  t.match(waiting.status.message, /Pod slice-c is waiting to be scheduled: 0\/2 nodes are available/, 'the scheduler says why')
  t.match(waiting.status.message, /claim/i, 'and that it is the claim that cannot be allocated')
  t.equal(waiting.status.nodeName, undefined)
  const claimC = await must(ref('resourceclaims', waiting.status.accelerator.claim, NS))
  t.equal(claimC.status?.allocation, undefined, 'its claim is not allocated')

  await t.test('stopping one share frees it: the claim goes with the Pod, and the waiting Instance gets the room', async (t) => {
    await cluster.kubectl(['patch', 'instance', 'slice-a', '-n', NS, '--type=merge', '-p', '{"spec":{"stop":true}}'])
    const stopPass = await driver.syncOnce({ namespace: NS, name: 'slice-a' })
    t.same(
      stopPass.writes.filter((w) => w.target.startsWith('ResourceClaimTemplate')),
      [],
      'the template is neither replaced nor written: what is stored is what is answered'
    )
    await kubeletRemoves('slice-a')
    await eventually(
      'the claim of slice-a to be deleted',
      async () => ((await get(ref('resourceclaims', a.claim.metadata.name, NS))) === undefined ? true : undefined),
      60_000
    )
    const stopped = await driveInstance(env, { namespace: NS, name: 'slice-a' }, 'Stopped', (i) => i.status?.phase === 'Stopped')
    t.equal(stopped.status.accelerator, undefined, 'no Pod, no accelerator in status')
    const template = await get(ref('resourceclaimtemplates', 'slice-a-accelerator', NS))
    t.ok(template, 'the template stays while stopped')
    t.equal(template?.metadata.uid, a.template.metadata.uid, 'the same template, never replaced')
    const c = await scheduled('slice-c')
    t.same(results(c.claim), ['hami-core-gpu.project-hami.io gpu-hami hami-gpu-0 gpu'], 'slice-c now shares the device')
  })
})

t.test('deleting an Instance removes its template', async (t) => {
  await cluster.kubectl(['delete', 'instance', 'mig-small', '-n', NS, '--wait=false'])
  await driver.syncOnce({ namespace: NS, name: 'mig-small' })
  await kubeletRemoves('mig-small')
  await eventually(
    'the Instance to be finalized and gone',
    async () => {
      await driver.syncOnce({ namespace: NS, name: 'mig-small' }).catch(() => undefined)
      return (await get(refs.instance(NS, 'mig-small'))) === undefined ? true : undefined
    },
    60_000
  )
  t.equal(await get(ref('resourceclaimtemplates', 'mig-small-accelerator', NS)), undefined)
})
