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
 * HAMi's scheduler writes them, with `hami.io/vgpu-node`, before it binds the Pod; so does anyone
 * who may create a Pod, which is why an unbound Pod's claim counts only where it names a device
 * the Node registered ({@link allocationsOf}).
 */
import { MAX_CELL_DEVICES, MAX_DEVICE_TEXT, type CellDevice } from '../../../api/cellnodeset.ts'
import { clipText } from '../../../k8s/clip.ts'
import { isRecord } from '../../../k8s/objects.ts'

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

const INTEGER = /^-?\d+$/

/**
 * Reads `hami.io/node-nvidia-register`: JSON first, then the 7- or 9-field records.
 * `undefined` is `Missing`; anything that parses in neither form is `Unparseable` with no devices.
 * A compromised cell writes this annotation, so what it can make the agent copy into the status
 * is bounded: more than {@link MAX_CELL_DEVICES} devices, an id past {@link MAX_DEVICE_TEXT}
 * characters or a figure past 2^53 − 1 is `Unparseable`; a type is clipped.
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
  if (!Array.isArray(parsed) || parsed.length > MAX_CELL_DEVICES) return undefined
  const devices: CellDevice[] = []
  for (const entry of parsed) {
    if (!isRecord(entry) || typeof entry.id !== 'string' || entry.id === '' || entry.id.length > MAX_DEVICE_TEXT) return undefined
    const memory = entry.devmem ?? 0
    const cores = entry.devcore ?? 0
    if (!Number.isSafeInteger(memory) || !Number.isSafeInteger(cores)) return undefined
    devices.push({
      id: entry.id,
      type: typeof entry.type === 'string' ? clipText(entry.type, MAX_DEVICE_TEXT) : '',
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
    // A figure past 2^53 - 1 would not survive into the status (a compromised cell writes this annotation).
    if (
      id === '' ||
      id.length > MAX_DEVICE_TEXT ||
      ![count, memory, cores, numa].every((f) => INTEGER.test(f) && Number.isSafeInteger(Number(f)))
    )
      return undefined
    if (fields.length === 9 && !INTEGER.test(fields[7] ?? '')) return undefined
    const healthy = parseGoBool(health)
    if (healthy === undefined) return undefined
    devices.push({ id, type: clipText(type, MAX_DEVICE_TEXT), memoryMiB: Number(memory), cores: Number(cores), healthy })
    if (devices.length > MAX_CELL_DEVICES) return undefined
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
 * The device ids a Pod annotation names (`uuid,type,mem,cores` per device, `:` between devices,
 * `;` between containers). `undefined` for an annotation that does not decode, so the caller can
 * decide what an unreadable allocation means.
 */
export function podDevices(value: string | undefined): string[] | undefined {
  if (value === undefined) return []
  const ids: string[] = []
  for (const container of value.split(';')) {
    for (const device of container.split(':')) {
      if (device === '') continue
      const fields = device.split(',')
      if (fields.length < 4 || fields[0] === '' || fields[1] === '') return undefined
      if (!INTEGER.test(fields[2] ?? '') || !INTEGER.test(fields[3] ?? '')) return undefined
      ids.push(fields[0] as string)
    }
  }
  return ids
}

/** How many devices a Pod annotation names; `undefined` when it does not decode. */
export function podDeviceCount(value: string | undefined): number | undefined {
  return podDevices(value)?.length
}

/** A Pod as the allocation count reads it. */
interface PodView {
  bound: string | undefined
  scheduledTo: string | undefined
  terminal: boolean
  allocated: string | undefined
  toAllocate: string | undefined
}

function podView(pod: unknown): PodView | undefined {
  if (!isRecord(pod)) return undefined
  const metadata = isRecord(pod.metadata) ? pod.metadata : {}
  const annotations = isRecord(metadata.annotations) ? metadata.annotations : {}
  const text = (key: string): string | undefined => {
    const value = Object.hasOwn(annotations, key) ? annotations[key] : undefined
    return typeof value === 'string' ? value : undefined
  }
  const nodeName = isRecord(pod.spec) ? pod.spec.nodeName : undefined
  const phase = isRecord(pod.status) ? pod.status.phase : undefined
  return {
    bound: typeof nodeName === 'string' && nodeName !== '' ? nodeName : undefined,
    scheduledTo: text(HAMI_NODE_ANNOTATION),
    terminal: phase === 'Succeeded' || phase === 'Failed',
    allocated: text(HAMI_ALLOCATED_ANNOTATION),
    toAllocate: text(HAMI_TO_ALLOCATE_ANNOTATION)
  }
}

/**
 * HAMi allocations on the Node `node`, whose registered devices are `devices`: non-terminal Pods
 * bound to it (`spec.nodeName`, from the per-Node list `bound`), and unbound ones (from `unbound`)
 * that HAMi's scheduler chose it for (`hami.io/vgpu-node`) and whose annotation names one of its
 * devices.
 *
 * The two are trusted differently. A bound Pod runs there: an annotation of it that does not
 * decode counts as holding a device, so a drain waits rather than removing a cell under a running
 * GPU Pod. An unbound Pod is only a claim, and any tenant can write one naming any Node: it counts
 * only where its annotation decodes to one of the Node's own device ids, as HAMi's scheduler
 * writes it, so a Pending Pod with an annotation that decodes to nothing pins no drain.
 */
export function allocationsOf(
  node: string,
  devices: readonly CellDevice[],
  bound: { read: boolean; items: readonly unknown[] },
  unbound: { read: boolean; items: readonly unknown[]; truncated?: boolean }
): { read: boolean; pods: number; inFlight: boolean } {
  const ids = new Set(devices.map((d) => d.id))
  const namesDevice = (value: string | undefined): boolean => (podDevices(value) ?? []).some((id) => ids.has(id))
  const holdsOrUnread = (value: string | undefined): boolean => {
    const named = podDevices(value)
    return named === undefined || named.length > 0
  }
  let pods = 0
  let inFlight = false
  for (const item of bound.items) {
    const pod = podView(item)
    if (pod === undefined || pod.bound !== node || pod.terminal) continue
    if (holdsOrUnread(pod.allocated)) pods++
    if (holdsOrUnread(pod.toAllocate)) inFlight = true
  }
  for (const item of unbound.items) {
    const pod = podView(item)
    if (pod === undefined || pod.bound !== undefined || pod.scheduledTo !== node || pod.terminal) continue
    if (namesDevice(pod.allocated)) pods++
    if (namesDevice(pod.toAllocate)) inFlight = true
  }
  // A truncated list of pending Pods may miss one HAMi has annotated for this Node: unread, so a drain waits.
  return { read: bound.read && unbound.read && unbound.truncated !== true, pods, inFlight }
}
