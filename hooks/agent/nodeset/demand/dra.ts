/**
 * HAMi's DRA mode, read as the workload agent needs it (docs/workload.md, "HAMi's DRA mode"): the
 * same devices, allocations and demand the annotations give in device plugin mode, from the
 * workload cluster's ResourceSlices, ResourceClaims and DeviceClass.
 *
 * Facts (Project-HAMi/k8s-dra-driver, k8s.io/api resource/v1 and k8s.io/kubernetes v1.37.2):
 * - HAMi's kubelet plugin publishes one pool per Node, named after it (`spec.pool.name` and
 *   `spec.nodeName` are the Node's name), driver {@link HAMI_DRA_DRIVER}; a device per GPU
 *   (`hami-gpu-<minor>`, attributes `uuid` and `productName`) with capacities `cores` (100,
 *   decimal) and `memory` (bytes) and `allowMultipleAllocations: true`.
 * - While DRAConsumableCapacity is off, the API server drops `allowMultipleAllocations` and each
 *   capacity's `requestPolicy` from a slice it stores (resourceslice strategy,
 *   `dropDisabledDRAConsumableCapacityFields`); the capacity values stay. A HAMi device without
 *   `allowMultipleAllocations` is therefore the gate off (each GPU goes whole to one claim), and a
 *   device without `cores` or `memory` a capacity the agent does not know: never read as 0 left.
 * - An allocated claim's `status.allocation.devices.results[]` names `driver`, `pool`, `device`
 *   and, for a shared device, `consumedCapacity`; `status.reservedFor` lists the Pods that use it.
 *   The scheduler writes the allocation and the reservation in one status update (before it binds
 *   the Pod), and the resourceclaim controller removes the last reservation and the allocation in
 *   one update too; a driver need not reserve with its allocation, though. A claim allocated on a
 *   Node and reserved for no Pod is therefore one whose consumer is not known: in flight, and a
 *   drain waits for it (the safe reading; with the scheduler and the controller alone it does not
 *   last).
 * - A Pod names its claims in `spec.resourceClaims[]` (`resourceClaimName`, or
 *   `resourceClaimTemplateName` whose generated claim the Pod's
 *   `status.resourceClaimStatuses[].resourceClaimName` names).
 *
 * Every object is untrusted and of any shape: the reader takes only what has the expected type,
 * bounds what it copies (as hami.ts does) and never throws.
 */
import { HAMI_DRA_DRIVER, MAX_CELL_DEVICES, MAX_DEVICE_TEXT, type CellDevice, type CellNodeStatus } from '../../../api/cellnodeset.ts'
import { clipText } from '../../../k8s/clip.ts'
import { asList, asRecord, asText, isRecord } from '../../../k8s/objects.ts'
import { saturatingAdd, wholeQuantity } from './quantity.ts'
import { UNREADABLE } from './demand.ts'

const MIB = 2 ** 20

/** A list the snapshot layer tried to read. */
export interface ReadList {
  read: boolean
  items: readonly unknown[]
  truncated?: boolean
}

/** The devices HAMi's slices publish for one Node. */
export interface DraDevices {
  registration: NonNullable<CellNodeStatus['registration']>
  devices: CellDevice[]
  consumableCapacity?: NonNullable<CellNodeStatus['consumableCapacity']>
}

/** A device of one of HAMi's slices for `node`, with how its capacity read. */
interface PublishedDevice {
  device: CellDevice
  name: string
  shared: boolean
  capacityKnown: boolean
}

function stringAttribute(attributes: unknown, name: string): string | undefined {
  const attribute = asRecord(asRecord(attributes)[name])
  const qualified = asRecord(asRecord(attributes)[`${HAMI_DRA_DRIVER}/${name}`])
  return asText(attribute.string) ?? asText(qualified.string)
}

function capacityOf(device: Record<string, unknown>, name: string, unit: number): number | undefined {
  const capacity = asRecord(device.capacity)
  if (!Object.hasOwn(capacity, name)) return undefined
  const value = wholeQuantity(asRecord(capacity[name]).value, unit)
  return value
}

/** True when `slice` is one of HAMi's for `node`. */
function sliceOf(slice: unknown, node: string): Record<string, unknown> | undefined {
  if (!isRecord(slice)) return undefined
  const spec = asRecord(slice.spec)
  if (spec.driver !== HAMI_DRA_DRIVER) return undefined
  if (asText(asRecord(spec.pool).name) !== node || spec.nodeName !== node) return undefined
  return spec
}

function publishedOn(slices: readonly unknown[], node: string): PublishedDevice[] | undefined {
  const out = new Map<string, PublishedDevice>()
  for (const slice of slices) {
    const spec = sliceOf(slice, node)
    if (spec === undefined) continue
    for (const item of asList(spec.devices)) {
      if (!isRecord(item)) continue
      const name = asText(item.name)
      if (name === undefined || name === '' || out.has(name)) continue
      const id = stringAttribute(item.attributes, 'uuid') ?? name
      if (id.length > MAX_DEVICE_TEXT) return undefined
      const memoryMiB = capacityOf(item, 'memory', MIB)
      const cores = capacityOf(item, 'cores', 1)
      const type = clipText(
        stringAttribute(item.attributes, 'productName') ?? stringAttribute(item.attributes, 'type') ?? '',
        MAX_DEVICE_TEXT
      )
      out.set(name, {
        name,
        device: { id, type, memoryMiB: memoryMiB ?? 0, cores: cores ?? 0, healthy: true },
        shared: item.allowMultipleAllocations === true,
        capacityKnown: memoryMiB !== undefined && cores !== undefined
      })
      if (out.size > MAX_CELL_DEVICES) return undefined
    }
  }
  return [...out.values()]
}

/** The result of one allocated claim on one of `node`'s devices. */
interface Share {
  device: string
  memoryMiB: number
  cores: number
}

function sharesOn(claim: unknown, node: string): Share[] {
  const results = asList(asRecord(asRecord(asRecord(asRecord(claim).status).allocation).devices).results)
  const out: Share[] = []
  for (const r of results) {
    if (!isRecord(r) || r.driver !== HAMI_DRA_DRIVER || r.pool !== node) continue
    const device = asText(r.device)
    if (device === undefined) continue
    const consumed = asRecord(r.consumedCapacity)
    out.push({ device, memoryMiB: wholeQuantity(consumed.memory, MIB) ?? 0, cores: wholeQuantity(consumed.cores) ?? 0 })
  }
  return out
}

function reserved(claim: unknown): boolean {
  return asList(asRecord(asRecord(claim).status).reservedFor).length > 0
}

/**
 * A Node's row fields in DRA mode: its devices (with what the allocated claims consume of each),
 * its allocations (`pods`: claims allocated on its devices and reserved for a Pod; `inFlight`:
 * one allocated and reserved for none), and whether the consumable-capacity gate is on.
 */
export function draNodeRow(
  node: string,
  slices: ReadList,
  claims: ReadList
): Pick<CellNodeStatus, 'devices' | 'registration' | 'consumableCapacity' | 'allocations' | 'message'> {
  const published = slices.read ? publishedOn(slices.items, node) : undefined
  if (published === undefined) {
    const message = slices.read
      ? `HAMi's ResourceSlices for Node ${node} publish more than ${MAX_CELL_DEVICES} devices or a device id past ${MAX_DEVICE_TEXT} characters`
      : `HAMi's ResourceSlices for Node ${node} could not be listed`
    return { devices: [], registration: 'Unparseable', allocations: { read: false, pods: 0 }, message }
  }
  const byName = new Map(published.map((p) => [p.name, p]))
  let pods = 0
  let inFlight = false
  for (const claim of claims.items) {
    const shares = sharesOn(claim, node).filter((s) => byName.has(s.device))
    if (shares.length === 0) continue
    if (reserved(claim)) pods++
    else inFlight = true
    for (const share of shares) {
      const p = byName.get(share.device) as PublishedDevice
      p.device.allocatedMemoryMiB = saturatingAdd(p.device.allocatedMemoryMiB ?? 0, share.memoryMiB)
      p.device.allocatedCores = saturatingAdd(p.device.allocatedCores ?? 0, share.cores)
    }
  }
  const devices = published.map((p) => p.device)
  const row: ReturnType<typeof draNodeRow> = {
    devices,
    registration: devices.length > 0 ? 'Parsed' : 'Missing',
    allocations: { read: claims.read && claims.truncated !== true, pods, ...(inFlight ? { inFlight } : {}) }
  }
  if (published.length === 0) return row
  if (published.some((p) => !p.capacityKnown)) {
    row.consumableCapacity = 'Unpublished'
    row.message = `a HAMi device on Node ${node} publishes no cores or memory capacity: its share is unknown`
  } else if (published.some((p) => !p.shared)) {
    row.consumableCapacity = 'Disabled'
    row.message =
      `HAMi's devices on Node ${node} carry no allowMultipleAllocations: DRAConsumableCapacity is off in the workload cluster, ` +
      'so each GPU is allocated whole, to one claim at a time'
  } else row.consumableCapacity = 'Enabled'
  return row
}

/** A claim's name within a namespace, as a map key. */
const claimKey = (namespace: string, name: string): string => `${namespace}/${name}`

/** The workload cluster's claims by namespace and name (own properties only, any shape). */
export function claimIndex(claims: readonly unknown[]): Map<string, Record<string, unknown>> {
  const index = new Map<string, Record<string, unknown>>()
  for (const claim of claims) {
    if (!isRecord(claim)) continue
    const metadata = asRecord(claim.metadata)
    const name = asText(metadata.name)
    const namespace = asText(metadata.namespace)
    if (name !== undefined && namespace !== undefined) index.set(claimKey(namespace, name), claim)
  }
  return index
}

/** The claims a Pod uses, by the names its spec and status give. */
function podClaims(pod: Record<string, unknown>, index: ReadonlyMap<string, Record<string, unknown>>): Record<string, unknown>[] {
  const namespace = asText(asRecord(pod.metadata).namespace) ?? ''
  const generated = new Map<string, string>()
  for (const s of asList(asRecord(pod.status).resourceClaimStatuses)) {
    const name = asText(asRecord(s).name)
    const claim = asText(asRecord(s).resourceClaimName)
    if (name !== undefined && claim !== undefined) generated.set(name, claim)
  }
  const out: Record<string, unknown>[] = []
  for (const entry of asList(asRecord(pod.spec).resourceClaims)) {
    const e = asRecord(entry)
    const name = asText(e.resourceClaimName) ?? (asText(e.name) !== undefined ? generated.get(asText(e.name) as string) : undefined)
    const claim = name === undefined ? undefined : index.get(claimKey(namespace, name))
    if (claim !== undefined) out.push(claim)
  }
  return out
}

/**
 * What a Pod's unallocated claims on `deviceClassName` ask for, as a demand shape: devices (each
 * `exactly` request's count, 1 when not ExactCount), and per device the largest `memory` (MiB) and
 * `cores` capacity request (0: not stated, as HAMi's default policy then gives the whole
 * device). Undefined when no such claim; {@link UNREADABLE} when a figure does not read.
 */
export function claimDemand(
  pod: unknown,
  index: ReadonlyMap<string, Record<string, unknown>>,
  deviceClassName: string
): { devices: number; memoryMiB: number; cores: number } | typeof UNREADABLE | undefined {
  if (!isRecord(pod)) return undefined
  const total = { devices: 0, memoryMiB: 0, cores: 0 }
  let asked = false
  for (const claim of podClaims(pod, index)) {
    if (isRecord(asRecord(claim.status).allocation)) continue
    for (const request of asList(asRecord(asRecord(claim.spec).devices).requests)) {
      const exactly = asRecord(asRecord(request).exactly)
      if (exactly.deviceClassName !== deviceClassName) continue
      asked = true
      const mode = exactly.allocationMode ?? 'ExactCount'
      const count = mode === 'ExactCount' ? (Object.hasOwn(exactly, 'count') ? wholeQuantity(exactly.count) : 1) : 1
      const requests = asRecord(asRecord(exactly.capacity).requests)
      const memory = Object.hasOwn(requests, 'memory') ? wholeQuantity(requests.memory, MIB) : 0
      const cores = Object.hasOwn(requests, 'cores') ? wholeQuantity(requests.cores) : 0
      if (count === undefined || memory === undefined || cores === undefined) return UNREADABLE
      total.devices = saturatingAdd(total.devices, count)
      total.memoryMiB = Math.max(total.memoryMiB, memory)
      total.cores = Math.max(total.cores, cores)
    }
  }
  return asked ? total : undefined
}
