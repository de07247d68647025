/**
 * Text the pool copies from machines it does not write (docs/cellpool.md, "Status"): a SwiftGuest's
 * or a Machine's condition message, its node name, its device addresses, a Machine's providerID.
 * Whoever writes those could make each a megabyte, copied once per cell; so text is clipped to
 * its documented length and an identifier past its length is not copied but reported.
 */
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { CellNodeSetSpecSchema } from '../../hooks/api/cellnodeset.ts'
import { readMachine, withProviderID } from '../../hooks/cellpool/provisioners/clusterapi-children.ts'
import { readMachineAsGuest } from '../../hooks/cellpool/provisioners/clusterapi.ts'
import { cellStatusRow } from '../../hooks/cellpool/answer/status.ts'
import { readGuest } from '../../hooks/cellpool/provisioners/swift-guest.ts'
import { sync } from '../../hooks/cellpool/hooks.ts'
import { MAX_MESSAGE_CHARS, clipText, nameWithin } from '../../hooks/k8s/clip.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { PoolWorld } from './fixtures/cellpool.ts'

const MIB = 'x'.repeat(1024 * 1024)

t.test('clipText keeps short text, clips long text to the length with an ellipsis, never splits a pair', async (t) => {
  t.equal(clipText('short'), 'short')
  t.equal(clipText('a'.repeat(1024)), 'a'.repeat(1024))
  t.equal(clipText('a'.repeat(1025)), `${'a'.repeat(1023)}…`)
  t.equal(clipText('abcdef', 4), 'abc…')
  // '😀' is two UTF-16 units: a cut inside it keeps neither half.
  t.equal(clipText('ab😀cd', 4), 'ab…')
  t.equal(nameWithin('gpu-host-1'), 'gpu-host-1')
  t.equal(nameWithin('n'.repeat(254)), undefined)
  t.equal(nameWithin(undefined), undefined)
})

t.test('a SwiftGuest of megabyte text is read clipped, its long names not at all, and says so', async (t) => {
  const problems: string[] = []
  const guest: KubeObject = {
    apiVersion: 'swift.kubeswift.io/v1alpha1',
    kind: 'SwiftGuest',
    metadata: { name: 'inference-0', uid: 'g0' },
    status: {
      phase: 'Failed',
      gpu: { nodeName: MIB, devices: ['0000:3b:00.0', MIB, ...Array.from({ length: 20 }, (_, i) => `0000:${i}:00.0`)] },
      network: {
        primaryIP: MIB,
        interfaces: [
          { name: 'primary', ip: MIB },
          { name: MIB, ip: '10.0.0.5' }
        ]
      },
      conditions: [{ type: MIB, status: 'False', reason: MIB, message: MIB }]
    }
  }
  const view = readGuest(guest, problems)
  t.equal(view.hostNode, undefined)
  t.equal(view.primaryIP, undefined)
  t.same(view.interfaces, [{ name: 'primary' }])
  t.equal(view.devices.length, 16)
  t.equal(view.devices[0], '0000:3b:00.0')
  t.equal(view.conditions[0]?.message?.length, 1024)
  t.equal(view.conditions[0]?.reason?.length, 128)
  t.equal(view.conditions[0]?.type.length, 128)
  t.same(problems, [
    'SwiftGuest inference-0: an address of status.gpu.devices is past 253 characters',
    'SwiftGuest inference-0: status.gpu.devices lists more than 16 devices; the first 16 are shown',
    'SwiftGuest inference-0: status.gpu.nodeName is 1048576 characters, past the 253 of a node name; not shown'
  ])
})

t.test("a Machine's megabyte condition and node name are read clipped or not at all", async (t) => {
  const view = readMachine({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: { name: 'cells-0' },
    status: { nodeRef: { name: MIB }, conditions: [{ type: 'Ready', status: 'False', reason: MIB, message: MIB }] }
  })
  t.equal(view.nodeName, undefined)
  t.equal(view.notReady?.message?.length, 1024)
  t.equal(view.notReady?.reason?.length, 128)
})

t.test('a Machine providerID past 512 characters is not copied into the CellNodeSet, and is reported', async (t) => {
  const long = `kubeswift://capi/${'m'.repeat(600)}`
  const problems: string[] = []
  const guest = readMachineAsGuest(
    { apiVersion: 'x', kind: 'Machine', metadata: { name: 'cells-0' }, spec: { providerID: long } },
    problems
  )
  t.equal(guest.providerID, undefined)
  t.same(problems, ['Machine cells-0: spec.providerID is 617 characters, past the 512 a CellNodeSet entry takes; not copied'])
  const entry = withProviderID({ name: 'cells-0' }, guest)
  t.same(entry, { name: 'cells-0' })
  t.ok(Value.Check(CellNodeSetSpecSchema, { kubeconfigSecretRef: { name: 'k', key: 'value' }, poolUID: 'u', nodes: [entry] }))
  const fits = readMachineAsGuest({
    apiVersion: 'x',
    kind: 'Machine',
    metadata: { name: 'cells-0' },
    spec: { providerID: 'kubeswift://capi/cells-0' }
  })
  t.equal(fits.providerID, 'kubeswift://capi/cells-0')
})

t.test('a status row clips its reason and messages whatever sentence carried them', async (t) => {
  const out = cellStatusRow({
    name: 'p-0',
    index: 0,
    phase: 'Failed',
    reason: MIB,
    message: `The guest reports Failed: ${MIB}.`,
    lastTransitionTime: '2026-01-01T00:00:00Z',
    readyOnce: false,
    failureCount: 1,
    owned: true,
    failure: { reason: MIB, since: '2026-01-01T00:00:00Z', message: MIB }
  })
  t.equal(out.message?.length, MAX_MESSAGE_CHARS)
  t.equal(out.reason?.length, 128)
  t.equal(out.failure?.message.length, MAX_MESSAGE_CHARS)
  t.equal(out.failure?.reason.length, 128)
})

t.test("a guest that fails with a megabyte message: the pool's status stays small", async (t) => {
  const world = new PoolWorld()
  world.settle(sync)
  const [guest] = world.guests()
  t.ok(guest !== undefined, 'the cell has a guest')
  if (guest === undefined) return
  guest.status = {
    phase: 'Failed',
    gpu: { devices: ['0000:3b:00.0'], nodeName: MIB },
    conditions: [{ type: 'ImageReady', status: 'False', reason: 'ImageNotReady', message: MIB }]
  }
  const answer = world.pass(sync)
  const status = answer.status as { cells: Array<{ message: string; hostNode?: string }> }
  const [cell] = status.cells
  t.ok(cell !== undefined && cell.message.length <= MAX_MESSAGE_CHARS, 'the message is clipped')
  t.equal(cell?.hostNode, undefined, 'the node name is not copied')
  t.ok(JSON.stringify(answer.status).length < 16 * 1024, 'the whole status stays a few KiB')
})
