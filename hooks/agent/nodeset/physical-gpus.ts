/**
 * The infrastructure cluster's physical GPUs, summarized per pool for the CellNodeSet status
 * (docs/cellpool.md, "Free physical GPUs"; CellNodeSet `spec.physicalGPUs`, `status.physicalGPUs`).
 *
 * The agent keeps one informer each on the infrastructure cluster's ResourceSlices and
 * ResourceClaims; a pool's sync then carries four counts instead of every claim of the cluster,
 * and a claim changing anywhere no longer resyncs every pool. The counts follow gpucellpool's
 * inventory, as the hook counted them from its related objects before: the devices are those the
 * ResourceSlices of the pool's driver publish (keyed `<pool>/<device>`, each once however many
 * slices name it); a device is ready unless its attribute `vfioReady` (qualified or not) is
 * `{bool: false}`; a ready device is held when an allocated claim of any namespace names it in
 * `status.allocation.devices.results[]`; `own` are those the pool's shared claim holds.
 *
 * Pure and linear in the number of objects; any shape of object is read without a throw. The
 * summary is cached per driver and claim until an informer reports a change (`PhysicalGpuIndex`).
 */
import type { CellNodeSetSpec, CellNodeSetStatus } from '../../api/cellnodeset.ts'
import { asList, asRecord, asText, isRecord, ownValue } from '../../k8s/objects.ts'

/** What `status.physicalGPUs` holds, without its time. */
export type PhysicalGpuCounts = Omit<NonNullable<CellNodeSetStatus['physicalGPUs']>, 'observedTime'>
type Wanted = NonNullable<CellNodeSetSpec['physicalGPUs']>

function notReady(device: Record<string, unknown>, driver: string): boolean {
  const attributes = device.attributes
  return [ownValue(attributes, 'vfioReady'), ownValue(attributes, `${driver}/vfioReady`)].some(
    (a) => isRecord(a) && ownValue(a, 'bool') === false
  )
}

/** The counts for `wanted` (the driver, and the pool's shared claim in `namespace`) over any objects. */
export function summarizePhysicalGpus(
  slices: readonly unknown[],
  claims: readonly unknown[],
  wanted: Wanted,
  namespace: string
): PhysicalGpuCounts {
  const { driver } = wanted
  const published = new Set<string>()
  const unready = new Set<string>()
  for (const slice of slices) {
    const spec = asRecord(asRecord(slice).spec)
    const pool = asText(asRecord(spec.pool).name)
    if (spec.driver !== driver || pool === undefined) continue
    for (const d of asList(spec.devices)) {
      const name = isRecord(d) ? asText(d.name) : undefined
      if (name === undefined || !isRecord(d)) continue
      published.add(`${pool}/${name}`)
      if (notReady(d, driver)) unready.add(`${pool}/${name}`)
    }
  }
  const ready = new Set([...published].filter((key) => !unready.has(key)))
  const held = new Set<string>()
  const own = new Set<string>()
  for (const claim of claims) {
    const metadata = asRecord(asRecord(claim).metadata)
    const mine = wanted.claimName !== undefined && metadata.name === wanted.claimName && metadata.namespace === namespace
    const results = asList(asRecord(asRecord(asRecord(asRecord(claim).status).allocation).devices).results)
    for (const r of results) {
      if (!isRecord(r) || r.driver !== driver) continue
      const pool = asText(r.pool)
      const device = asText(r.device)
      if (pool === undefined || device === undefined || !ready.has(`${pool}/${device}`)) continue
      held.add(`${pool}/${device}`)
      if (mine) own.add(`${pool}/${device}`)
    }
  }
  return { published: published.size, ready: ready.size, held: held.size, own: own.size }
}

/** The informers' caches as the index reads them. */
export interface PhysicalGpuSources {
  /** True once both informers have listed. */
  synced(): boolean
  slices(): readonly unknown[]
  claims(): readonly unknown[]
}

/**
 * The summaries of the current informer contents, each computed once until `changed()` is
 * called (on any informer event): with many pools of one driver and no shared claim, one
 * reading of the caches per change serves them all.
 */
export class PhysicalGpuIndex {
  private readonly memo = new Map<string, PhysicalGpuCounts>()
  constructor(private readonly sources: PhysicalGpuSources) {}

  changed(): void {
    this.memo.clear()
  }

  /** The counts for a CellNodeSet's `spec.physicalGPUs`, or undefined while the informers have not listed. */
  counts(wanted: Wanted, namespace: string): PhysicalGpuCounts | undefined {
    if (!this.sources.synced()) return undefined
    const key = JSON.stringify([wanted.driver, wanted.claimName === undefined ? '' : namespace, wanted.claimName ?? ''])
    let counts = this.memo.get(key)
    if (counts === undefined) {
      counts = summarizePhysicalGpus(this.sources.slices(), this.sources.claims(), wanted, namespace)
      this.memo.set(key, counts)
    }
    return counts
  }
}
