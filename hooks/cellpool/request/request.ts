/**
 * The GPUCellPool hook request and a defensive reader of it.
 *
 * Everything in a request is untrusted: a tenant chooses names, and an observed child or the join
 * Secret may have any shape (a string where a list was expected, an object stored before a schema
 * existed). The reader never throws on such input and never indexes a plain object with a key
 * the request chose (Object.hasOwn and Map only); what it cannot read is a reported problem, and
 * the part it could not read counts as absent.
 *
 * Cells are found from the observed children by the cell labels: a child counts for cell `i` when
 * its labels name this pool, the cell `<pool>-<i>` and the index `i`, and its name is the one the
 * controller gives that child (Secret `<cell>-bootstrap`, SwiftSeedProfile `<cell>-seed`, SwiftGuest
 * `<cell>`). Any other observed child is a stray. A stray of a name the pool gives its children
 * (answer-rule.ts) is kept exactly as it is and reported, so a relabelled VM is never deleted by
 * mistake. A stray of another name or namespace is reported and left out of every answer, so
 * Metacontroller deletes it: it carries the pool's `controller-uid` label (that is how it came to
 * be observed, adopted by Metacontroller), which anyone who may label an object in the namespace
 * can put on any object there, and keeping it would mean answering an object of a name someone
 * else chose, which Metacontroller would write with its own rights (docs/metacontroller.md rule 10). A
 * sync that fails instead would let that label freeze the pool: no drain, no status, no scaling.
 * Deleting an adopted object the controller does not want is also what Kubernetes' own
 * controllers do with an adopted Pod they do not need.
 */
import { CELL_INDEX, CELL_INDEX_LABEL, CELL_LABEL, CELL_NODE_SET_TYPE_KEY, cellName, POOL_LABEL } from '../../api/cellnodeset.ts'
import { SECRET_TYPE_KEY, SEED_PROFILE_TYPE_KEY, SWIFT_GUEST_TYPE_KEY } from '../../api/gpucellpool.ts'
import { readCellNodeSet as readStoredNodeSet } from '../../api/cellnodeset-reader.ts'
import { asRecord, asText, ownValue, type KubeObject } from '../../k8s/objects.ts'
import { isOwnChild } from '../../metacontroller/answer-guard.ts'
import { objectKey, observedObject, observedOfType } from '../../metacontroller/observed.ts'
import { CELL_POOL_CHILD_RULE } from './answer-rule.ts'
import { readPrevious } from './previous-status.ts'
import { bootstrapSecretName } from './cell-names.ts'
import type { CellProvisioner } from '../model/provisioner.ts'
import { CELL_INFRASTRUCTURE_TYPE_KEY, MACHINE_TYPE_KEY } from '../../api/cellinfrastructure.ts'
import type { ObservedCell } from '../model/cell.ts'
import type { CellNodeSetView, PoolView } from '../model/pool.ts'
import type { CellPoolSyncRequest } from '../model/request.ts'

/** The machine and seed kinds of every provisioner (model/provisioner.ts). */
const CELL_MACHINE_TYPES = [SWIFT_GUEST_TYPE_KEY, SEED_PROFILE_TYPE_KEY, MACHINE_TYPE_KEY]

/** The cell index a child's labels give, when they name this pool and agree with each other. */
function labelledIndex(child: KubeObject, pool: string): number | undefined {
  const labels = asRecord(child.metadata.labels)
  const index = ownValue(labels, CELL_INDEX_LABEL)
  if (ownValue(labels, POOL_LABEL) !== pool || typeof index !== 'string' || !CELL_INDEX.test(index)) return undefined
  if (ownValue(labels, CELL_LABEL) !== cellName(pool, Number(index))) return undefined
  return Number(index)
}

/**
 * The pool's CellNodeSet and the status the agent wrote, read through the CellNodeSet's own
 * schemas (api/cellnodeset-reader.ts, the reader the agent uses too): what fails is dropped and
 * named in `problems`.
 */
export function readNodeSet(object: KubeObject, problems: string[]): CellNodeSetView {
  const read = readStoredNodeSet(object)
  if (typeof read === 'string') {
    problems.push(`CellNodeSet ${object.metadata.name ?? ''}: ${read}`)
    return {
      object,
      generation: undefined,
      hasStatus: false,
      reachable: undefined,
      observedTime: undefined,
      observedGeneration: undefined,
      rows: new Map(),
      entries: new Map(),
      demand: undefined,
      physicalGPUs: undefined
    }
  }
  problems.push(...read.statusProblems.map((p) => `CellNodeSet ${read.metadata.name}: ${p}`))
  const { status } = read
  const reachable =
    read.reachable === undefined
      ? undefined
      : { status: read.reachable.status, reason: read.reachable.reason, message: read.reachable.message }
  const demand =
    status.demand === undefined
      ? undefined
      : { read: status.demand.read, pendingPods: status.demand.pendingPods, shapes: status.demand.shapes ?? [] }
  return {
    object,
    generation: read.metadata.generation,
    hasStatus: read.hasStatus,
    reachable,
    observedTime: status.observedTime,
    observedGeneration: status.observedGeneration,
    rows: read.rows,
    // Of two entries of one name the first counts, as with the status rows.
    entries: new Map([...(read.spec?.nodes ?? [])].reverse().map((entry) => [entry.name, entry])),
    demand,
    physicalGPUs: status.physicalGPUs
  }
}

/** The name of the join Secret the spec names, read defensively. */
export function joinSecretName(spec: Record<string, unknown>): string | undefined {
  return asText(asRecord(asRecord(ownValue(spec, 'bootstrap')).joinSecretRef).name)
}

/** Reads the request; the cells' own children are those `provisioner` makes. */
export function readPool(request: CellPoolSyncRequest, provisioner: CellProvisioner): PoolView {
  const { name, namespace, uid, generation, deletionTimestamp } = request.parent.metadata
  const problems: string[] = []
  const cells = new Map<number, ObservedCell>()
  const strays: KubeObject[] = []
  const cellOf = (index: number): ObservedCell => {
    let c = cells.get(index)
    if (c === undefined) {
      c = { index, name: cellName(name, index) }
      cells.set(index, c)
    }
    return c
  }
  const foreign: KubeObject[] = []
  const scope = { parentName: name, namespace }
  const leaveOut = (kind: string, child: KubeObject): void => {
    foreign.push(child)
    problems.push(
      `${kind} ${child.metadata.namespace ?? ''}/${child.metadata.name ?? ''} carries this pool's controller-uid label but is not a ` +
        'child the pool names; it is left out, so Metacontroller deletes it'
    )
  }
  const place = (type: string, childName: (cell: string) => string, set: (c: ObservedCell, o: KubeObject) => void, kind: string): void => {
    for (const child of observedOfType(request.children, type)) {
      if (!isOwnChild(CELL_POOL_CHILD_RULE, scope, type, child)) {
        leaveOut(kind, child)
        continue
      }
      const index = labelledIndex(child, name)
      const expected = index === undefined ? undefined : childName(cellName(name, index))
      if (index === undefined || child.metadata.name !== expected) {
        strays.push(child)
        problems.push(`${kind} ${child.metadata.name ?? ''} carries no consistent cell labels of this pool; it is kept as it is`)
        continue
      }
      set(cellOf(index), child)
    }
  }
  place(
    SECRET_TYPE_KEY,
    bootstrapSecretName,
    (c, o) => {
      c.secret = o
    },
    'Secret'
  )
  const seed = provisioner.seed
  if (seed !== undefined) {
    place(
      seed.type,
      seed.name,
      (c, o) => {
        c.seed = o
      },
      seed.kind
    )
  }
  place(
    provisioner.guest.type,
    provisioner.guest.name,
    (c, o) => {
      c.guest = o
      c.guestView = provisioner.readGuest(o, problems)
    },
    provisioner.guest.kind
  )
  let cellNodeSet: CellNodeSetView | undefined
  for (const cns of observedOfType(request.children, CELL_NODE_SET_TYPE_KEY)) {
    if (isOwnChild(CELL_POOL_CHILD_RULE, scope, CELL_NODE_SET_TYPE_KEY, cns)) cellNodeSet = readNodeSet(cns, problems)
    else leaveOut('CellNodeSet', cns)
  }
  const own = new Set([provisioner.guest.type, provisioner.seed?.type])
  const otherProvisioner = CELL_MACHINE_TYPES.filter((type) => !own.has(type)).flatMap((type) =>
    observedOfType(request.children, type).filter((child) => isOwnChild(CELL_POOL_CHILD_RULE, scope, type, child))
  )
  let cellInfrastructure: KubeObject | undefined
  for (const ci of observedOfType(request.children, CELL_INFRASTRUCTURE_TYPE_KEY)) {
    if (isOwnChild(CELL_POOL_CHILD_RULE, scope, CELL_INFRASTRUCTURE_TYPE_KEY, ci)) cellInfrastructure = ci
    else leaveOut('CellInfrastructure', ci)
  }
  const secretName = joinSecretName(request.parent.spec)
  const joinSecret =
    secretName === undefined ? undefined : observedObject(request.related, SECRET_TYPE_KEY, objectKey(secretName, namespace))
  return {
    name,
    namespace,
    uid: uid ?? '',
    generation,
    deletionTimestamp,
    spec: request.parent.spec,
    cells: new Map([...cells].sort(([a], [b]) => a - b)),
    strays,
    foreign,
    cellNodeSet,
    cellInfrastructure,
    otherProvisioner,
    joinSecret,
    previous: readPrevious(request.parent.status),
    problems
  }
}
