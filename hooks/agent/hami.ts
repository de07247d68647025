/**
 * HAMi's annotations, read as the workload agent needs them (docs/workload.md, "devices" and
 * "allocations").
 *
 * The Node annotation `hami.io/node-nvidia-register` is written by HAMi's device plugin: current
 * releases write a JSON array of devices (`id`, `type`, `devmem` MiB, `devcore` percent, `health`;
 * Go's `omitempty` drops `health: false`), older ones colon-separated records of 7 fields
 * (`uuid,count,mem,cores,type,numa,health`) or 9 (plus `index,mode`). HAMi itself tries JSON
 * first and falls back to the records, and so does this reader. Capacity is never read from the
 * Node's `allocatable`, which HAMi inflates by its split count.
 *
 * The Pod annotations `hami.io/vgpu-devices-allocated` and `hami.io/vgpu-devices-to-allocate`
 * hold, per container (`;`-separated), devices (`:`-separated) of `uuid,type,mem,cores`. The
 * device plugin empties `to-allocate` container by container (leaving `;`) once it has allocated.
 */
import type { CellDevice } from '../api/cellnodeset.ts'
import { isRecord } from '../k8s/objects.ts'

/** HAMi's Pod annotation: the devices the device plugin allocated. */
export const HAMI_ALLOCATED_ANNOTATION = 'hami.io/vgpu-devices-allocated'
/** HAMi's Pod annotation: devices the scheduler chose and the device plugin has not allocated yet. */
export const HAMI_TO_ALLOCATE_ANNOTATION = 'hami.io/vgpu-devices-to-allocate'
/** HAMi's Pod annotation: the Node its scheduler chose, written before the Pod is bound. */
export const HAMI_NODE_ANNOTATION = 'hami.io/vgpu-node'

/** How the registration annotation read. */
export type Registration = 'Missing' | 'Parsed' | 'Unparseable'

/** The devices of a Node and how its registration read. */
export interface RegisteredDevices {
  registration: Registration
  devices: CellDevice[]
}

/** More devices than any host carries: a longer annotation is garbage, not a registration. */
const MAX_DEVICES = 1024
const INTEGER = /^-?\d+$/

/**
 * Reads `hami.io/node-nvidia-register`: JSON first, then the 7- or 9-field records.
 * `undefined` is `Missing`; anything that parses in neither form is `Unparseable` with no devices.
 */
export function parseRegistration(value: string | undefined): RegisteredDevices {
  if (value === undefined) return { registration: 'Missing', devices: [] }
  const devices = fromJson(value) ?? fromRecords(value)
  return devices === undefined ? { registration: 'Unparseable', devices: [] } : { registration: 'Parsed', devices }
}

function fromJson(value: string): CellDevice[] | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return undefined
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_DEVICES) return undefined
  const devices: CellDevice[] = []
  for (const entry of parsed) {
    if (!isRecord(entry) || typeof entry.id !== 'string' || entry.id === '') return undefined
    const memory = entry.devmem ?? 0
    const cores = entry.devcore ?? 0
    if (!Number.isSafeInteger(memory) || !Number.isSafeInteger(cores)) return undefined
    devices.push({
      id: entry.id,
      type: typeof entry.type === 'string' ? entry.type : '',
      memoryMiB: memory as number,
      cores: cores as number,
      healthy: entry.health === true
    })
  }
  return devices
}

function fromRecords(value: string): CellDevice[] | undefined {
  if (!value.includes(':')) return undefined
  const devices: CellDevice[] = []
  for (const record of value.split(':')) {
    if (record === '') continue
    const fields = record.split(',')
    if (fields.length !== 7 && fields.length !== 9) return undefined
    const [id = '', count = '', memory = '', cores = '', type = '', numa = '', health = ''] = fields
    if (id === '' || ![count, memory, cores, numa].every((f) => INTEGER.test(f))) return undefined
    if (fields.length === 9 && !INTEGER.test(fields[7] ?? '')) return undefined
    const healthy = parseGoBool(health)
    if (healthy === undefined) return undefined
    devices.push({ id, type, memoryMiB: Number(memory), cores: Number(cores), healthy })
    if (devices.length > MAX_DEVICES) return undefined
  }
  return devices
}

/** Go's strconv.ParseBool, which HAMi uses for the health field. */
function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(text)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(text)) return false
  return undefined
}

/**
 * How many devices a Pod annotation names (`uuid,type,mem,cores` per device, `:` between
 * devices, `;` between containers). `undefined` for an annotation that does not decode, so the
 * caller can decide what an unreadable allocation means.
 */
export function podDeviceCount(value: string | undefined): number | undefined {
  if (value === undefined) return 0
  let count = 0
  for (const container of value.split(';')) {
    for (const device of container.split(':')) {
      if (device === '') continue
      const fields = device.split(',')
      if (fields.length < 4 || fields[0] === '' || fields[1] === '') return undefined
      if (!INTEGER.test(fields[2] ?? '') || !INTEGER.test(fields[3] ?? '')) return undefined
      count++
    }
  }
  return count
}
