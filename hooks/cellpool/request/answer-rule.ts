/**
 * What the GPUCellPool controller may answer (docs/metacontroller.md rule 10, checked on every answer
 * by hooks/metacontroller/answer-guard.ts): the child types metacontroller/cellpool.yaml and
 * cellpool-clusterapi.yaml declare, in the pool's namespace, named as docs/cellpool.md names them:
 * per cell `<pool>-<i>` the Secret `<pool>-<i>-bootstrap`, the SwiftSeedProfile `<pool>-<i>-seed`
 * and the SwiftGuest or Machine `<pool>-<i>`; per pool the CellNodeSet and the CellInfrastructure
 * `<pool>`. The index is spelled as {@link CELL_INDEX}
 * spells it, the one spelling the hooks read back as a cell.
 */
import { CELL_INDEX, CELL_NODE_SET_TYPE_KEY, CELLS_API_VERSION } from '../../api/cellnodeset.ts'
import { SECRET_TYPE_KEY, SEED_API_VERSION, SEED_PROFILE_TYPE_KEY, SWIFT_API_VERSION, SWIFT_GUEST_TYPE_KEY } from '../../api/gpucellpool.ts'
import { CELL_INFRASTRUCTURE_TYPE_KEY, CLUSTER_API_VERSION, MACHINE_TYPE_KEY } from '../../api/cellinfrastructure.ts'
import type { ChildRule } from '../../metacontroller/answer-guard.ts'
import { bootstrapSecretName, seedProfileName } from './cell-names.ts'

/** Whether `name` is `<pool>-<i>` followed by `suffix` for a cell index `i`. */
function isCellChildName(pool: string, name: string, suffix: (cell: string) => string): boolean {
  const prefix = `${pool}-`
  if (!name.startsWith(prefix)) return false
  const index = /^[0-9]+/.exec(name.slice(prefix.length))?.[0]
  return index !== undefined && CELL_INDEX.test(index) && name === suffix(`${prefix}${index}`)
}

/** The GPUCellPool controller's rule. */
export const CELL_POOL_CHILD_RULE: ChildRule = {
  controller: 'gpuhooks-cellpool',
  shape: 'composite',
  types: [
    { apiVersion: 'v1', resource: 'secrets', kind: 'Secret' },
    { apiVersion: SEED_API_VERSION, resource: 'swiftseedprofiles', kind: 'SwiftSeedProfile' },
    { apiVersion: SWIFT_API_VERSION, resource: 'swiftguests', kind: 'SwiftGuest' },
    { apiVersion: CELLS_API_VERSION, resource: 'cellnodesets', kind: 'CellNodeSet' },
    { apiVersion: CELLS_API_VERSION, resource: 'cellinfrastructures', kind: 'CellInfrastructure' },
    { apiVersion: CLUSTER_API_VERSION, resource: 'machines', kind: 'Machine' }
  ],
  isChildName: (scope, type, name) => {
    const pool = scope.parentName
    if (type === SECRET_TYPE_KEY) return isCellChildName(pool, name, bootstrapSecretName)
    if (type === SEED_PROFILE_TYPE_KEY) return isCellChildName(pool, name, seedProfileName)
    if (type === SWIFT_GUEST_TYPE_KEY || type === MACHINE_TYPE_KEY) return isCellChildName(pool, name, (cell) => cell)
    return (type === CELL_NODE_SET_TYPE_KEY || type === CELL_INFRASTRUCTURE_TYPE_KEY) && name === pool
  }
}
