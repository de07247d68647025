/**
 * The extended resources an Instance asks for (docs/instance.md, "Accelerator requests").
 *
 * The InstanceType's device plugin decides the names: `<base>` is its `resourceName` (default
 * `nvidia.com/gpu`) and `<vendor>` the domain part of it (`nvidia.com`).
 *
 * | family      | HAMi                                                     | GPUStack                                               | NVIDIA                       |
 * | ----------- | -------------------------------------------------------- | ------------------------------------------------------ | ---------------------------- |
 * | Whole N     | base N, vendor/gpumem-percentage 100, vendor/gpucores 100 | base N                                                 | base N                       |
 * | Shared N    | base N                                                   | base.shared N                                          | base.shared N                |
 * | Sliced      | base 1, vendor/gpumem M or vendor/gpumem-percentage P, vendor/gpucores C | base.sliced 1, base.sliced.memory-mib M or .memory-percentage P, .cores-percentage C | not offered |
 * | Partitioned | vendor/mig-<profile> 1                                   | base.partitioned 1, base.partitioned.mig-<profile> 1   | vendor/mig-<profile> 1       |
 * | SSH sidecar | none                                                     | device.gpustack.ai/<manufacturer>.visibility N         | none                         |
 *
 * The type's `visibilityResource` replaces the sidecar row for every plugin. With `devicePlugin: DRA`
 * there is no extended resource at all: the Pod names a ResourceClaimTemplate instead (claim.ts). An absent
 * `coresPercentage` means 100. Quantities are strings, as the API server prints them. Extended
 * resources cannot be overcommitted, so the caller puts each map in both requests and limits.
 */
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { sortedRecord } from '../k8s/objects.ts'
import type { ResolvedAccelerator } from './validate.ts'

/** Resources of the `main` container and of the SSH sidecar. */
export interface AcceleratorResources {
  main: Record<string, string>
  sidecar: Record<string, string>
}

/** The resource name the type's plugin uses for whole accelerators when the type names none. */
export const DEFAULT_RESOURCE_NAME = 'nvidia.com/gpu'

/**
 * The resources for `accel` on `type`: `main` for the workload container, `sidecar` for the SSH
 * sidecar's visibility. Empty maps for a CPU-only workspace (no accelerator, or count 0). Keys
 * are sorted, so the rendered Pod is byte-stable.
 *
 * Throws for a request the type cannot serve (Sliced on the NVIDIA plugin): `typeProblems`
 * reports that as a spec error first, so reaching it here is a bug.
 */
export function acceleratorRequests(accel: ResolvedAccelerator | undefined, type: InstanceTypeSpec): AcceleratorResources {
  if (accel === undefined || accel.count < 1) return { main: {}, sidecar: {} }
  const plugin = type.devicePlugin ?? 'HAMi'
  if (plugin === 'DRA') return { main: {}, sidecar: {} }
  const base = type.resourceName ?? DEFAULT_RESOURCE_NAME
  const vendor = base.split('/')[0] ?? base
  const n = String(accel.count)
  const main: Record<string, string> = {}
  switch (accel.family) {
    case 'Whole':
      main[base] = n
      if (plugin === 'HAMi') {
        // HAMi shares devices unless told otherwise: a whole device is all its memory and cores.
        main[`${vendor}/gpumem-percentage`] = '100'
        main[`${vendor}/gpucores`] = '100'
      }
      break
    case 'Shared':
      main[plugin === 'HAMi' ? base : `${base}.shared`] = n
      break
    case 'Sliced': {
      const cores = String(accel.coresPercentage ?? 100)
      if (plugin === 'HAMi') {
        main[base] = '1'
        if (accel.memoryMiB !== undefined) main[`${vendor}/gpumem`] = String(accel.memoryMiB)
        else if (accel.memoryPercentage !== undefined) main[`${vendor}/gpumem-percentage`] = String(accel.memoryPercentage)
        main[`${vendor}/gpucores`] = cores
      } else if (plugin === 'GPUStack') {
        main[`${base}.sliced`] = '1'
        if (accel.memoryMiB !== undefined) main[`${base}.sliced.memory-mib`] = String(accel.memoryMiB)
        else if (accel.memoryPercentage !== undefined) main[`${base}.sliced.memory-percentage`] = String(accel.memoryPercentage)
        main[`${base}.sliced.cores-percentage`] = cores
      } else {
        throw new Error('acceleratorRequests: the NVIDIA device plugin offers no Sliced family (typeProblems reports it first)')
      }
      break
    }
    case 'Partitioned':
      if (plugin === 'GPUStack') {
        main[`${base}.partitioned`] = '1'
        main[`${base}.partitioned.mig-${accel.profile}`] = '1'
      } else {
        main[`${vendor}/mig-${accel.profile}`] = '1'
      }
      break
  }
  return { main: sortedRecord(main), sidecar: sidecarVisibility(accel.count, type) }
}

/** The SSH sidecar's visibility resource: the type's override, GPUStack's default, or none. */
function sidecarVisibility(count: number, type: InstanceTypeSpec): Record<string, string> {
  const name =
    type.visibilityResource !== undefined && type.visibilityResource !== ''
      ? type.visibilityResource
      : (type.devicePlugin ?? 'HAMi') === 'GPUStack'
        ? `device.gpustack.ai/${type.manufacturer ?? 'nvidia'}.visibility`
        : undefined
  return name === undefined ? {} : { [name]: String(count) }
}
