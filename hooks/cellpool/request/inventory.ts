/**
 * The infrastructure cluster's physical GPUs as a DRA pool's related objects show them
 * (docs/cellpool.md, "Free physical GPUs"): the scale-up check reads how many of the KubeSwift
 * DRA driver's devices are free before a cell is built, so that no cell is created that could
 * only wait in `AllocatingGPU`.
 *
 * The facts follow gpucellpool's inventory: the devices are those the ResourceSlices of driver
 * {@link GPU_DRIVER} publish (pool = the slice's `spec.pool.name`); a device is ready unless its
 * attribute `vfioReady` is `false` (absent: ready); a ready device is held when an allocated
 * ResourceClaim of any namespace names it in `status.allocation.devices.results[]`; free is ready
 * minus held, never below 0. Each device counts once, however many slices or claims name it.
 *
 * What the inventory cannot say is unknown, never full, so it never blocks a scale-up: a driver
 * that publishes no device (no DRA driver of KubeSwift, or it has not started), related types
 * missing from the request (customize not answered yet), a claim template not observed, or a
 * request constrained by selectors (the free devices might not match them).
 *
 * Every related object is untrusted and may have any shape: the reader takes only strings and
 * arrays where it expects them, keys its sets with Map/Set, and is linear in the request's size.
 */
import { asList, asRecord, asText, isRecord, ownValue, type KubeObject } from '../../k8s/objects.ts'
import type { TypedObjects } from '../../metacontroller/schemas.ts'
import { objectKey, observedObject, observedOfType } from '../../metacontroller/observed.ts'
import type { ResolvedDra } from '../model/resolved-pool.ts'

/** The DRA driver of KubeSwift's VFIO GPUs. */
export const GPU_DRIVER = 'gpu.kubeswift.io'
/** The group and version of the DRA objects read. */
export const DRA_API_VERSION = 'resource.k8s.io/v1'
export const RESOURCE_SLICE_TYPE_KEY = `ResourceSlice.${DRA_API_VERSION}`
export const RESOURCE_CLAIM_TYPE_KEY = `ResourceClaim.${DRA_API_VERSION}`
export const RESOURCE_CLAIM_TEMPLATE_TYPE_KEY = `ResourceClaimTemplate.${DRA_API_VERSION}`

/** Counts of the driver's devices, when the inventory says something. */
export interface KnownInventory {
  known: true
  published: number
  ready: number
  held: number
  /** Ready and not held, at least 0. */
  free: number
  /**
   * Devices the pool's own shared claim (`dra.resourceClaimName`) holds: they are the pool's
   * cell's, free for it to use.
   */
  own: number
}

/** Why the inventory says nothing. */
export interface UnknownInventory {
  known: false
  reason: 'NoDevicesPublished' | 'InventoryNotRelated' | 'ClaimTemplateNotObserved' | 'RequestConstrained' | 'NativeBackend'
  message: string
}

export type Inventory = KnownInventory | UnknownInventory

/** True when a device's attributes say it is not ready for VFIO (`vfioReady: {bool: false}`, qualified or not). */
function notReady(device: Record<string, unknown>): boolean {
  const attributes = device.attributes
  return [ownValue(attributes, 'vfioReady'), ownValue(attributes, `${GPU_DRIVER}/vfioReady`)].some(
    (a) => isRecord(a) && ownValue(a, 'bool') === false
  )
}

/**
 * The driver's devices as `<pool>/<device>` keys: every one published, and the ready ones (a
 * device any slice reports not ready is not ready, whichever slice came last).
 */
function publishedDevices(slices: readonly KubeObject[]): { published: Set<string>; ready: Set<string> } {
  const published = new Set<string>()
  const unready = new Set<string>()
  for (const slice of slices) {
    const spec = asRecord(slice.spec)
    const pool = asText(asRecord(spec.pool).name)
    if (spec.driver !== GPU_DRIVER || pool === undefined) continue
    for (const d of asList(spec.devices)) {
      const name = isRecord(d) ? asText(d.name) : undefined
      if (name === undefined || !isRecord(d)) continue
      published.add(`${pool}/${name}`)
      if (notReady(d)) unready.add(`${pool}/${name}`)
    }
  }
  return { published, ready: new Set([...published].filter((key) => !unready.has(key))) }
}

/** The ready devices an allocated claim holds, as `<pool>/<device>` keys. */
function heldBy(claim: KubeObject, ready: ReadonlySet<string>): string[] {
  const results = asList(asRecord(asRecord(asRecord(claim.status).allocation).devices).results)
  const out: string[] = []
  for (const r of results) {
    if (!isRecord(r) || r.driver !== GPU_DRIVER) continue
    const pool = asText(r.pool)
    const device = asText(r.device)
    if (pool !== undefined && device !== undefined && ready.has(`${pool}/${device}`)) out.push(`${pool}/${device}`)
  }
  return out
}

/** True when a DRA claim spec's `devices.requests[]` narrows a request with selectors. */
export function constrainedBySelectors(claimSpec: unknown): boolean {
  return asList(asRecord(asRecord(claimSpec).devices).requests).some((request) => {
    const r = asRecord(request)
    if (asList(asRecord(r.exactly).selectors).length > 0) return true
    return asList(r.firstAvailable).some((sub) => asList(asRecord(sub).selectors).length > 0)
  })
}

/** The claim spec a pool's cells ask with, or why it cannot be read. */
function requestedSpec(
  related: TypedObjects | null | undefined,
  namespace: string,
  dra: ResolvedDra
): { spec?: unknown; problem?: UnknownInventory } {
  const key = objectKey(dra.claim.name, namespace)
  if (dra.claim.kind === 'resourceClaimName') return { spec: observedObject(related, RESOURCE_CLAIM_TYPE_KEY, key)?.spec }
  const template = observedObject(related, RESOURCE_CLAIM_TEMPLATE_TYPE_KEY, key)
  if (template !== undefined) return { spec: asRecord(template.spec).spec }
  return {
    problem: {
      known: false,
      reason: 'ClaimTemplateNotObserved',
      message: `The ResourceClaimTemplate ${dra.claim.name} is not observed, so the devices it asks for are not known.`
    }
  }
}

/** The inventory a DRA pool's related objects give (see the header). */
export function draInventory(related: TypedObjects | null | undefined, namespace: string, dra: ResolvedDra): Inventory {
  if (!Object.hasOwn(asRecord(related), RESOURCE_SLICE_TYPE_KEY) || !Object.hasOwn(asRecord(related), RESOURCE_CLAIM_TYPE_KEY)) {
    return {
      known: false,
      reason: 'InventoryNotRelated',
      message: 'The request carries no ResourceSlices and ResourceClaims (the customize answer relating them has not been applied yet).'
    }
  }
  const requested = requestedSpec(related, namespace, dra)
  if (requested.problem !== undefined) return requested.problem
  if (constrainedBySelectors(requested.spec)) {
    const what = dra.claim.kind === 'resourceClaimName' ? 'ResourceClaim' : 'ResourceClaimTemplate'
    return {
      known: false,
      reason: 'RequestConstrained',
      message: `The ${what} ${dra.claim.name} narrows its request with selectors, which the free devices may not match; they are not counted.`
    }
  }
  const { published, ready } = publishedDevices(observedOfType(related, RESOURCE_SLICE_TYPE_KEY))
  if (published.size === 0) {
    return {
      known: false,
      reason: 'NoDevicesPublished',
      message: `No ResourceSlice publishes a device of driver ${GPU_DRIVER}; without it the inventory says nothing.`
    }
  }
  const held = new Set<string>()
  const own = new Set<string>()
  const ownKey = dra.claim.kind === 'resourceClaimName' ? objectKey(dra.claim.name, namespace) : undefined
  for (const claim of observedOfType(related, RESOURCE_CLAIM_TYPE_KEY)) {
    const devices = heldBy(claim, ready)
    const mine = ownKey !== undefined && objectKey(claim.metadata.name ?? '', claim.metadata.namespace) === ownKey
    for (const d of devices) {
      held.add(d)
      if (mine) own.add(d)
    }
  }
  return {
    known: true,
    published: published.size,
    ready: ready.size,
    held: held.size,
    free: Math.max(0, ready.size - held.size),
    own: own.size
  }
}
