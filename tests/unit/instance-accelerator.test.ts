import t from 'tap'
import { acceleratorRequests, type AcceleratorResources } from '../../hooks/instance/accelerator.ts'
import type { ResolvedAccelerator } from '../../hooks/instance/validate.ts'
import type { InstanceTypeSpec } from '../../hooks/api/instancetype.ts'

const hami: InstanceTypeSpec = { devicePlugin: 'HAMi' }
const gpustack: InstanceTypeSpec = { devicePlugin: 'GPUStack' }
const nvidia: InstanceTypeSpec = { devicePlugin: 'NVIDIA' }
const none = { main: {}, sidecar: {} }

const cases: Array<{
  name: string
  given: { accel: ResolvedAccelerator | undefined; type: InstanceTypeSpec }
  expected: AcceleratorResources
}> = [
  {
    name: 'HAMi Whole asks for gpumem-percentage 100 and gpucores 100',
    given: { accel: { family: 'Whole', count: 2 }, type: hami },
    expected: { main: { 'nvidia.com/gpu': '2', 'nvidia.com/gpucores': '100', 'nvidia.com/gpumem-percentage': '100' }, sidecar: {} }
  },
  {
    name: 'GPUStack Whole asks for the base resource only, and the sidecar for visibility',
    given: { accel: { family: 'Whole', count: 2 }, type: gpustack },
    expected: { main: { 'nvidia.com/gpu': '2' }, sidecar: { 'device.gpustack.ai/nvidia.visibility': '2' } }
  },
  {
    name: 'NVIDIA Whole asks for the base resource only',
    given: { accel: { family: 'Whole', count: 1 }, type: nvidia },
    expected: { main: { 'nvidia.com/gpu': '1' }, sidecar: {} }
  },
  {
    name: 'HAMi Shared asks for the base resource',
    given: { accel: { family: 'Shared', count: 3 }, type: hami },
    expected: { main: { 'nvidia.com/gpu': '3' }, sidecar: {} }
  },
  {
    name: 'GPUStack Shared asks for <base>.shared',
    given: { accel: { family: 'Shared', count: 3 }, type: gpustack },
    expected: { main: { 'nvidia.com/gpu.shared': '3' }, sidecar: { 'device.gpustack.ai/nvidia.visibility': '3' } }
  },
  {
    name: 'NVIDIA Shared asks for the renamed time-slicing resource <base>.shared',
    given: { accel: { family: 'Shared', count: 1 }, type: nvidia },
    expected: { main: { 'nvidia.com/gpu.shared': '1' }, sidecar: {} }
  },
  {
    name: 'HAMi Sliced by MiB asks for gpumem and gpucores',
    given: { accel: { family: 'Sliced', count: 1, memoryMiB: 8192, coresPercentage: 30 }, type: hami },
    expected: { main: { 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '30', 'nvidia.com/gpumem': '8192' }, sidecar: {} }
  },
  {
    name: 'HAMi Sliced by percentage asks for gpumem-percentage, and absent coresPercentage means 100',
    given: { accel: { family: 'Sliced', count: 1, memoryPercentage: 25 }, type: hami },
    expected: { main: { 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '100', 'nvidia.com/gpumem-percentage': '25' }, sidecar: {} }
  },
  {
    name: 'GPUStack Sliced by MiB asks for <base>.sliced with memory-mib and cores-percentage',
    given: { accel: { family: 'Sliced', count: 1, memoryMiB: 4096, coresPercentage: 50 }, type: gpustack },
    expected: {
      main: { 'nvidia.com/gpu.sliced': '1', 'nvidia.com/gpu.sliced.cores-percentage': '50', 'nvidia.com/gpu.sliced.memory-mib': '4096' },
      sidecar: { 'device.gpustack.ai/nvidia.visibility': '1' }
    }
  },
  {
    name: 'GPUStack Sliced by percentage asks for memory-percentage, cores 100 when absent',
    given: { accel: { family: 'Sliced', count: 1, memoryPercentage: 10 }, type: gpustack },
    expected: {
      main: {
        'nvidia.com/gpu.sliced': '1',
        'nvidia.com/gpu.sliced.cores-percentage': '100',
        'nvidia.com/gpu.sliced.memory-percentage': '10'
      },
      sidecar: { 'device.gpustack.ai/nvidia.visibility': '1' }
    }
  },
  {
    name: 'HAMi Partitioned asks for <vendor>/mig-<profile>',
    given: { accel: { family: 'Partitioned', count: 1, profile: '1g.10gb' }, type: hami },
    expected: { main: { 'nvidia.com/mig-1g.10gb': '1' }, sidecar: {} }
  },
  {
    name: 'GPUStack Partitioned asks for <base>.partitioned and its mig profile',
    given: { accel: { family: 'Partitioned', count: 1, profile: '3g.40gb' }, type: gpustack },
    expected: {
      main: { 'nvidia.com/gpu.partitioned': '1', 'nvidia.com/gpu.partitioned.mig-3g.40gb': '1' },
      sidecar: { 'device.gpustack.ai/nvidia.visibility': '1' }
    }
  },
  {
    name: 'NVIDIA Partitioned asks for <vendor>/mig-<profile>',
    given: { accel: { family: 'Partitioned', count: 1, profile: '2g.20gb' }, type: nvidia },
    expected: { main: { 'nvidia.com/mig-2g.20gb': '1' }, sidecar: {} }
  },
  {
    name: 'the vendor is the domain part of resourceName',
    given: { accel: { family: 'Whole', count: 1 }, type: { devicePlugin: 'HAMi', resourceName: 'hami.io/vgpu' } },
    expected: { main: { 'hami.io/gpucores': '100', 'hami.io/gpumem-percentage': '100', 'hami.io/vgpu': '1' }, sidecar: {} }
  },
  {
    name: 'an absent devicePlugin means HAMi',
    given: { accel: { family: 'Whole', count: 1 }, type: {} },
    expected: { main: { 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '100', 'nvidia.com/gpumem-percentage': '100' }, sidecar: {} }
  },
  {
    name: 'the GPUStack visibility resource is named after the manufacturer',
    given: { accel: { family: 'Whole', count: 1 }, type: { devicePlugin: 'GPUStack', resourceName: 'amd.com/gpu', manufacturer: 'amd' } },
    expected: { main: { 'amd.com/gpu': '1' }, sidecar: { 'device.gpustack.ai/amd.visibility': '1' } }
  },
  {
    name: 'visibilityResource overrides the GPUStack default',
    given: { accel: { family: 'Whole', count: 2 }, type: { devicePlugin: 'GPUStack', visibilityResource: 'example.com/see' } },
    expected: { main: { 'nvidia.com/gpu': '2' }, sidecar: { 'example.com/see': '2' } }
  },
  {
    name: 'visibilityResource gives the HAMi sidecar a visibility resource too',
    given: { accel: { family: 'Shared', count: 1 }, type: { devicePlugin: 'HAMi', visibilityResource: 'example.com/see' } },
    expected: { main: { 'nvidia.com/gpu': '1' }, sidecar: { 'example.com/see': '1' } }
  },
  {
    name: 'no accelerator means a CPU-only workspace',
    given: { accel: undefined, type: gpustack },
    expected: none
  },
  {
    name: 'count 0 means a CPU-only workspace, without a visibility resource',
    given: { accel: { family: 'Whole', count: 0 }, type: { devicePlugin: 'GPUStack', visibilityResource: 'example.com/see' } },
    expected: none
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const got = acceleratorRequests(c.given.accel, c.given.type)
    t.strictSame(got, c.expected)
    // Sorted keys: the rendered Pod is byte-stable.
    t.strictSame(Object.keys(got.main), Object.keys(c.expected.main).sort())
  })
}

t.test('the NVIDIA plugin offers no Sliced family', async (t) => {
  t.throws(
    () => acceleratorRequests({ family: 'Sliced', count: 1, memoryMiB: 1024 }, nvidia),
    /NVIDIA device plugin offers no Sliced family/
  )
})
