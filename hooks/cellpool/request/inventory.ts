/**
 * The infrastructure cluster's physical GPUs for a DRA pool (docs/cellpool.md, "Free physical
 * GPUs"): the scale-up check reads how many of the KubeSwift DRA driver's devices are free before
 * a cell's machine is built, so that no cell is created that could only wait in `AllocatingGPU`.
 *
 * The counts come from the workload agent, which keeps informers on the cluster's ResourceSlices
 * and ResourceClaims and writes per pool a summary into the CellNodeSet status
 * (`status.physicalGPUs`: published, ready, held, own, with its `observedTime`; its rules in
 * hooks/agent/nodeset/physical-gpus.ts); free is ready minus held, never below 0. The request
 * relates only the pool's claim template (or shared claim), to see whether it narrows its request
 * with selectors.
 *
 * A summary that is missing (the agent has not written one: not running, informers not synced) or
 * older than {@link SUMMARY_WITHIN_SECONDS} errs toward waiting: no machine is built until a fresh
 * one says a device is free. What a fresh summary cannot say is unknown and holds nothing back, as
 * before: a driver that publishes no device (no DRA driver of KubeSwift, or it has not started), a
 * claim template not observed, or a request constrained by selectors.
 */
import { PHYSICAL_GPU_DRIVER, type CellNodeSetStatus } from '../../api/cellnodeset.ts'
import { asList, asRecord, isRecord } from '../../k8s/objects.ts'
import { parseTime } from '../../k8s/time.ts'
import type { TypedObjects } from '../../metacontroller/schemas.ts'
import { objectKey, observedObject } from '../../metacontroller/observed.ts'
import type { ResolvedDra } from '../model/resolved-pool.ts'

/** The DRA driver of KubeSwift's VFIO GPUs. */
export const GPU_DRIVER = PHYSICAL_GPU_DRIVER
/** A summary older than this (by its observedTime) is stale: builds wait. */
export const SUMMARY_WITHIN_SECONDS = 120
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
  reason:
    'NoDevicesPublished' | 'InventoryNotObserved' | 'InventoryStale' | 'ClaimTemplateNotObserved' | 'RequestConstrained' | 'NativeBackend'
  message: string
  /** True when builds wait until the inventory is known (a missing or stale summary). */
  wait?: boolean
}

export type Inventory = KnownInventory | UnknownInventory

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

/** The inventory of a DRA pool: its claim from the related objects, the counts from the agent's `summary` (see the header). */
export function draInventory(
  related: TypedObjects | null | undefined,
  namespace: string,
  dra: ResolvedDra,
  summary: CellNodeSetStatus['physicalGPUs'],
  now: Date
): Inventory {
  // The reader keeps only a summary that passes the schema; anything else is none.
  if (!isRecord(summary)) {
    return {
      known: false,
      reason: 'InventoryNotObserved',
      message: "The workload agent has not summarized the infrastructure cluster's physical GPUs into the CellNodeSet status yet.",
      wait: true
    }
  }
  const at = parseTime(summary.observedTime)
  if (at === undefined || now.getTime() - at >= SUMMARY_WITHIN_SECONDS * 1000) {
    return {
      known: false,
      reason: 'InventoryStale',
      message: `The workload agent's summary of the physical GPUs (${summary.observedTime}) is more than ${SUMMARY_WITHIN_SECONDS / 60} minutes old.`,
      wait: true
    }
  }
  if (summary.published === 0) {
    return {
      known: false,
      reason: 'NoDevicesPublished',
      message: `No ResourceSlice publishes a device of driver ${GPU_DRIVER}; without it the inventory says nothing.`
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
  return {
    known: true,
    published: summary.published,
    ready: summary.ready,
    held: summary.held,
    free: Math.max(0, summary.ready - summary.held),
    own: summary.own
  }
}
