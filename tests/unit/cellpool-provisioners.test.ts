/**
 * What differs between the provisioners lives behind CellProvisioner (docs/style.md rule 20): the
 * spec picks one, and each says for itself what a cell's CellNodeSet entry carries and whether the
 * pool has a child of its own.
 */
import t from 'tap'
import { buildMachine } from '../../hooks/cellpool/provisioners/clusterapi-children.ts'
import { otherProvisioner, provisionerOf } from '../../hooks/cellpool/provisioners/choose.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'
import { poolSpec } from './fixtures/cellpool.ts'

const capiSpec = (): Record<string, unknown> => {
  const spec = poolSpec() as { cell: Record<string, unknown> }
  spec.cell.provisioner = 'ClusterAPI'
  spec.cell.clusterAPI = { clusterName: 'gpu' }
  return spec
}
const ID = { poolName: 'cells', namespace: 'capi', poolUID: 'uid-pool', index: 0 }
const ENTRY = { name: 'cells-0', cordon: false, instance: 'uid-m' }

t.test('the spec names the provisioner; its name is what spec.cell.provisioner says', async (t) => {
  t.equal(provisionerOf(poolSpec()).name, 'SwiftGuest')
  t.equal(provisionerOf(capiSpec()).name, 'ClusterAPI')
  t.equal(provisionerOf({ cell: { provisioner: 'Other' } }).name, 'SwiftGuest', 'anything else reads as the default')
  t.equal(otherProvisioner(provisionerOf(poolSpec())).name, 'ClusterAPI')
  t.equal(otherProvisioner(provisionerOf(capiSpec())).name, 'SwiftGuest')
})

t.test('a SwiftGuest cell: its entry as every cell has it, and no child of the pool besides the CellNodeSet', async (t) => {
  const swift = provisionerOf(poolSpec())
  const pool = resolvePool(poolSpec())
  t.same(swift.nodeEntry(ENTRY, undefined), ENTRY)
  const guest = swift.readGuest({ apiVersion: 'x', kind: 'SwiftGuest', metadata: { name: 'cells-0', uid: 'uid-m' } }, [])
  t.same(swift.nodeEntry(ENTRY, guest), ENTRY)
  const input = { pool, poolName: 'cells', namespace: 'capi', poolUID: 'uid-pool', cells: [], children: [], observed: undefined }
  t.equal(swift.poolChild(input), undefined)
})

t.test('a Cluster API cell: its entry names the Machine providerID, and the pool answers its CellInfrastructure', async (t) => {
  const capi = provisionerOf(capiSpec())
  const pool = resolvePool(capiSpec())
  const built = buildMachine({ clusterName: 'gpu', version: '' }, ID, capi.templateHash(pool))
  const machine = {
    ...built,
    metadata: { ...built.metadata, uid: 'uid-m' },
    spec: { ...(built.spec as object), providerID: 'kubeswift://capi/cells-0' }
  }
  const guest = capi.readGuest(machine, [])
  t.same(capi.nodeEntry(ENTRY, guest), { ...ENTRY, providerID: 'kubeswift://capi/cells-0' })
  t.same(capi.nodeEntry(ENTRY, undefined), ENTRY, 'no Machine, no providerID')

  const input = { pool, poolName: 'cells', namespace: 'capi', poolUID: 'uid-pool', cells: [{ index: 0, machine }], children: [machine] }
  const answered = capi.poolChild({ ...input, observed: undefined })
  t.equal(answered?.kind, 'CellInfrastructure')
  t.same(
    (answered?.spec as { machines: Array<{ name: string; release?: boolean }> }).machines.map((m) => [m.name, m.release ?? false]),
    [['cells-0', false]],
    'an entry for the Machine the answer carries'
  )
  const released = capi.poolChild({ ...input, children: [], observed: answered })
  t.same(
    (released?.spec as { machines: Array<{ name: string; release?: boolean; machineUID?: string }> }).machines,
    [{ ...(answered?.spec as { machines: object[] }).machines[0], release: true, machineUID: 'uid-m' }],
    'the observed child is read back, and a Machine the answer lets go is released by its uid'
  )
})
