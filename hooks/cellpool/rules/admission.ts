/**
 * What the GPUCellPool admission check (hooks.ts `reviewCellPool`, docs/cellpool.md "Admission")
 * asks beside the spec rules every sync runs (rules/validate.ts).
 *
 * Fields accepted for gpucellpool manifests but not acted on (`spreadPolicy: Pack`,
 * `cell.clusterAPI`, `capacity.hami.deviceClassName` without mode DRA) pass with a warning that says so.
 *
 * An UPDATE may not change `spec.cell.provisioner` while the stored pool has cells (its status
 * counts any, or lists a row): a cell's machine is of its provisioner's kind (a SwiftGuest, or a
 * Machine with its KubeSwiftMachine), and under the other provisioner nothing would drain and
 * remove it in order. The pool is scaled to 0 first, or a new pool is made. The sync hook holds
 * such cells as they are if the change gets past admission anyway (plan/blocking.ts).
 */
import { isRecord } from '../../k8s/objects.ts'
import { provisionerOf } from '../provisioners/choose.ts'

/** How many cells the stored pool's status says it has (status.replicas, else its rows). */
function storedCells(old: Record<string, unknown>): number {
  const status = isRecord(old.status) ? old.status : {}
  const replicas = typeof status.replicas === 'number' && Number.isFinite(status.replicas) ? status.replicas : 0
  const rows = Array.isArray(status.cells) ? status.cells.length : 0
  return Math.max(replicas, rows)
}

/** A change of provisioner on a pool that has cells (see the header). */
export function provisionerChangeProblems(old: Record<string, unknown>, object: Record<string, unknown>): string[] {
  const before = provisionerOf(old.spec).name
  const after = provisionerOf(object.spec).name
  const cells = storedCells(old)
  if (before === after || cells === 0) return []
  return [
    `spec.cell.provisioner: may not change from ${before} to ${after} while the pool has cells (${cells} in its status); ` +
      'their machines are made by the provisioner that built them; scale the pool to 0 and wait until it has no cell, or create a new pool'
  ]
}

/** Warnings for fields this version accepts and ignores. */
export function notActedOn(spec: unknown): string[] {
  const s = isRecord(spec) ? spec : {}
  const cell = isRecord(s.cell) ? s.cell : {}
  const capacity = isRecord(s.capacity) ? s.capacity : {}
  const hami = isRecord(capacity.hami) ? capacity.hami : {}
  const warnings: string[] = []
  if (cell.spreadPolicy === 'Pack') {
    warnings.push('spec.cell.spreadPolicy Pack is not acted on: KubeSwift GPU launcher pods ignore topology spread constraints')
  }
  if (cell.clusterAPI !== undefined && cell.provisioner !== 'ClusterAPI') {
    warnings.push('spec.cell.clusterAPI is not acted on: it is read only with spec.cell.provisioner ClusterAPI')
  }
  if (hami.deviceClassName !== undefined && hami.mode !== 'DRA') {
    warnings.push('spec.capacity.hami.deviceClassName is not acted on: it is read only with spec.capacity.hami.mode DRA')
  }
  return warnings
}

/** The object's `metadata.name`, when it is a string. */
export function nameOf(object: Record<string, unknown>): string | undefined {
  const metadata = object.metadata
  return isRecord(metadata) && typeof metadata.name === 'string' ? metadata.name : undefined
}
