/**
 * Objects the pool did not make but observes (docs/cellpool.md; docs/metacontroller.md rules 5 and 10).
 * Metacontroller adopts any orphan that carries the pool's `controller-uid` label, and anyone who
 * may label an object in the namespace can put that label on one. An adopted object of a name the
 * pool never gives is left out of every answer, so Metacontroller deletes it, and reported; the
 * pool's own child that someone relabelled keeps its name and is kept exactly as it is; and the
 * teardown is finalized only once the adopted object is gone. Every expectation is written out.
 */
import t from 'tap'
import { sync, finalize } from '../../hooks/cellpool/hooks.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import type { CompositeResponse } from '../../hooks/metacontroller/schemas.ts'
import { GUEST_KEY, NS, POOL, POOL_UID, PoolWorld, T0, poolObject, request } from './fixtures/cellpool.ts'

const LAST_APPLIED = 'metacontroller.k8s.io/last-applied-configuration'
const INDEX_LABEL = 'cells.kubeswift.io/cell-index'
const LEFT_OUT = `SwiftGuest ${NS}/tenant-vm carries this pool's controller-uid label but is not a child the pool names; it is left out, so Metacontroller deletes it`
const KEPT = 'SwiftGuest inference-0 carries no consistent cell labels of this pool; it is kept as it is'

const progressing = (answer: CompositeResponse): string | undefined =>
  (answer.status as { conditions: Array<{ type: string; message: string }> }).conditions.find((c) => c.type === 'Progressing')?.message
const guestsIn = (answer: CompositeResponse): KubeObject[] => (answer.children as KubeObject[]).filter((c) => c.kind === 'SwiftGuest')

/**
 * A VM of the tenant's, labelled with the pool's controller-uid, as the pool's sync request shows
 * it once Metacontroller has adopted it (a controller reference to the pool added).
 */
function adoptedVM(extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'swift.kubeswift.io/v1alpha1',
    kind: 'SwiftGuest',
    metadata: {
      name: 'tenant-vm',
      namespace: NS,
      uid: 'tenant-vm-uid',
      labels: { 'controller-uid': POOL_UID },
      ownerReferences: [
        {
          apiVersion: 'cells.kubeswift.io/v1alpha1',
          kind: 'GPUCellPool',
          name: POOL,
          uid: POOL_UID,
          controller: true,
          blockOwnerDeletion: true
        }
      ],
      ...extra
    },
    spec: { guestClassRef: { name: 'big' }, imageRef: { name: 'tenant-image' }, runPolicy: 'Always' }
  }
}

t.test(
  'an adopted VM of a name the pool never gives is left out and reported, and a relabelled guest of its own name is kept',
  async (t) => {
    const world = new PoolWorld()
    world.settle(sync)
    const guests = world.observed[GUEST_KEY] ?? {}
    const own = guests[`${NS}/inference-0`] as unknown as KubeObject
    // What the pool last answered for its cell 0 guest, and its cell index label set by hand.
    const record = JSON.parse(String(own.metadata.annotations?.[LAST_APPLIED])) as KubeObject
    own.metadata.labels = { ...own.metadata.labels, [INDEX_LABEL]: '7' }
    guests[`${NS}/tenant-vm`] = adoptedVM() as never

    const answer = world.pass(sync)
    t.strictSame(
      guestsIn(answer)
        .map((g) => g.metadata.name)
        .sort(),
      ['inference-0', 'inference-1'],
      'the adopted VM is not answered; each guest of a name the pool gives is answered once'
    )
    t.strictSame(
      guestsIn(answer).find((g) => g.metadata.name === 'inference-0'),
      { ...record, metadata: { ...record.metadata, labels: { ...record.metadata.labels, [INDEX_LABEL]: '7' } } },
      'the relabelled guest is answered as observed, the hand-set label included: kept, not rebuilt'
    )
    const message = progressing(answer) ?? ''
    t.ok(message.includes(LEFT_OUT), `the adopted VM is reported: ${message}`)
    t.ok(message.includes(KEPT), 'and so is the relabelled guest')

    // Metacontroller's apply of that answer (simulate.ts): the adopted VM deleted, the rest in place.
    t.ok(world.operations.includes(`delete ${GUEST_KEY} ${NS}/tenant-vm`), world.operations.join(', '))
    t.strictSame(Object.keys(world.observed[GUEST_KEY] ?? {}).sort(), [`${NS}/inference-0`, `${NS}/inference-1`])
    const after = world.observed[GUEST_KEY]?.[`${NS}/inference-0`] as unknown as KubeObject
    t.strictSame([after.metadata.uid, after.metadata.labels?.[INDEX_LABEL]], [own.metadata.uid, '7'], 'the same guest, as relabelled')
  }
)

t.test('teardown leaves out an adopted VM of a name the pool never gives and is finalized only once it is gone', async (t) => {
  const deleting = (children: KubeObject[]): ReturnType<typeof request> =>
    request({ parent: poolObject(undefined, { deleting: '2026-03-01T09:59:00Z' }), children, finalizing: true })

  // KubeSwift stops a VM before it is gone: it is observed, being deleted, for a while.
  for (const vm of [adoptedVM(), adoptedVM({ deletionTimestamp: '2026-03-01T09:59:30Z', finalizers: ['kubeswift.io/vm'] })]) {
    const waiting = finalize(deleting([vm]), T0)
    t.strictSame(waiting.children, [], 'not answered, so Metacontroller deletes it')
    t.equal(waiting.finalized, false, 'the pool waits for it')
    t.ok(progressing(waiting)?.includes(LEFT_OUT), `reported: ${progressing(waiting) ?? ''}`)
  }
  const gone = finalize(deleting([]), T0)
  t.strictSame([gone.children, gone.finalized], [[], true], 'once it is gone, the pool is finalized')
})

t.test(
  'an adopted VM of a name the pool gives but of no cell it holds is kept as observed, and goes with the guests in teardown',
  async (t) => {
    // `inference-5` is a guest name of this pool, so the answer guard allows it, but the pool holds
    // two cells and the VM carries no cell labels: a stray, kept with the values it has (nothing
    // of the pool's written over it, nothing restored from its annotation), never rebuilt.
    const stray = adoptedVM({ name: 'inference-5' })
    const world = new PoolWorld()
    world.settle(sync)
    ;(world.observed[GUEST_KEY] ?? {})[`${NS}/inference-5`] = stray as never
    const answer = world.pass(sync)
    const { uid: _uid, ownerReferences: _refs, ...metadata } = stray.metadata
    t.strictSame(
      guestsIn(answer).find((g) => g.metadata.name === 'inference-5'),
      { ...stray, metadata },
      'answered as observed, without the server metadata: Metacontroller writes nothing new on it'
    )
    t.strictSame(
      guestsIn(answer)
        .map((g) => g.metadata.name)
        .sort(),
      ['inference-0', 'inference-1', 'inference-5']
    )
    t.ok(
      progressing(answer)?.includes('SwiftGuest inference-5 carries no consistent cell labels of this pool; it is kept as it is'),
      `reported: ${progressing(answer) ?? ''}`
    )
    // Metacontroller's apply (simulate.ts) records the answer as the annotation and changes nothing else.
    const after = world.observed[GUEST_KEY]?.[`${NS}/inference-5`] as unknown as KubeObject
    const { annotations: _recorded, resourceVersion: _rv, managedFields: _fields, ...afterMetadata } = after.metadata
    t.strictSame({ ...after, metadata: afterMetadata }, stray, 'the same VM: spec, labels and owner as they were')
    t.strictSame(Object.keys(after.metadata.annotations ?? {}), [LAST_APPLIED], 'only the record is new')

    // Teardown: a stray guest goes with the first wave, and the pool waits for it.
    const fin = finalize(
      request({ parent: poolObject(undefined, { deleting: '2026-03-01T09:59:00Z' }), children: [stray], finalizing: true }),
      T0
    )
    t.strictSame([fin.children, fin.finalized], [[], false], 'not answered (deleted), and the pool waits for it')
  }
)
