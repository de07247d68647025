/**
 * The agent's controller loop with fake clusters and a fake clock: when it runs passes (only
 * while it may act), how often (once per change, however many changes pile up), what a failure
 * costs (a retry with backoff, not a lost CellNodeSet), and what stopping waits for; which
 * series it exports (only while it may act, only for what it serves) and the Events it writes
 * about a pool (within the limits; a failed one counted, never retried).
 */
import t from 'tap'
import { INACTIVE_POLL_MS } from '../../hooks/agent/runtime/loop.ts'
import { cellNodeSet, emptyWorkload, POOL_UID, secret, setup } from '../support/agent-controller-fixture.ts'
import { settle } from '../support/fake-clock.ts'

t.test('while it may not act nothing runs; once it may, a queued CellNodeSet gets one pass however often it changed', async (t) => {
  const s = setup({ active: false })
  s.cellNodeSets.put(cellNodeSet('pool'))
  for (let i = 0; i < 3; i++) s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await s.clock.advance(5 * INACTIVE_POLL_MS)
  t.same(s.passes(), [], 'no pass while not active')
  s.state.active = true
  s.controller.wake()
  await settle()
  t.same(s.passes(), ['ns/pool'], 'one pass for three changes, without waiting for the poll')
  t.same(s.infra.writes, ['ns/pool'], 'the pass wrote the status')
  await s.controller.stop()
})

t.test('without a wake, an inactive loop looks again every second', async (t) => {
  const s = setup({ active: false })
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  s.state.active = true
  await s.clock.advance(INACTIVE_POLL_MS - 1)
  t.same(s.passes(), [])
  await s.clock.advance(1)
  t.same(s.passes(), ['ns/pool'])
  await s.controller.stop()
})

t.test('a change seen during a pass gets a pass of its own after it, never a second pass at once', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('pool'))
  const release = s.infra.holdWrites()
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.same(s.controller.passing, ['ns/pool'])
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.same(s.infra.writes, [], 'still in the first pass')
  release()
  await settle()
  t.same(s.passes(), ['ns/pool', 'ns/pool'], 'the first pass, then one more for the changes during it')
  t.same(s.controller.passing, [])
  await s.controller.stop()
})

t.test('a pass that reports an error is retried after 1 s, then 2 s; a pass that goes well resets the backoff', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.infra.failWrites = 2
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.equal(s.passes().length, 1)
  t.match(
    s.lines.find((l) => l.message === 'pass'),
    { level: 'warn', fields: { errors: [{ reason: 'StatusWrite' }] } }
  )
  await s.clock.advance(999)
  t.equal(s.passes().length, 1, 'not before its backoff')
  await s.clock.advance(1)
  t.equal(s.passes().length, 2, 'retried after 1 s')
  await s.clock.advance(1999)
  t.equal(s.passes().length, 2)
  await s.clock.advance(1)
  t.equal(s.passes().length, 3, 'retried again after 2 s, and this write goes through')
  await s.clock.advance(30_000)
  t.equal(s.passes().length, 3, 'no retry after a pass that went well')
  const errors = await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_errors_total')
  t.match(errors, /gpuhooks_workload_errors_total\{reason="StatusWrite"\} 2/)
  await s.controller.stop()
})

t.test('a pass that throws is logged, counted as Internal and retried; the loop goes on', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.state.workload = new Error('client construction failed')
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.match(
    s.lines.find((l) => l.message === 'pass failed'),
    { level: 'error', fields: { cellNodeSet: 'ns/pool' } }
  )
  const errors = await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_errors_total')
  t.match(errors, /reason="Internal"\} 1/)
  s.state.workload = emptyWorkload
  await s.clock.advance(1000)
  t.same(s.passes(), ['ns/pool'], 'the retry runs the pass')
  await s.controller.stop()
})

t.test('every CellNodeSet in the cache gets a pass each resync period', async (t) => {
  const s = setup({ resyncMs: 15_000 })
  s.cellNodeSets.put(cellNodeSet('a'))
  s.cellNodeSets.put(cellNodeSet('b'))
  await s.clock.advance(14_999)
  t.same(s.passes(), [], 'the cache was empty at start; nothing changed since')
  await s.clock.advance(1)
  t.same(s.passes(), ['ns/a', 'ns/b'])
  await s.clock.advance(15_000)
  t.same(s.passes(), ['ns/a', 'ns/b', 'ns/a', 'ns/b'])
  await s.controller.stop()
})

t.test('each pass reads the Secret its CellNodeSet names, by name; a client is built once per resourceVersion', async (t) => {
  const s = setup()
  s.infra.secrets.set('ns/other', secret('other'))
  s.infra.secrets.set('elsewhere/wl', secret('wl'))
  s.cellNodeSets.put(cellNodeSet('a', 'wl'))
  s.cellNodeSets.put(cellNodeSet('b', 'other'))
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  s.controller.cellNodeSetChanged(cellNodeSet('b'))
  await settle()
  t.same(s.passes(), ['ns/a', 'ns/b'])
  t.same(s.infra.secretReads, ['ns/wl', 'ns/other'], 'one read by name per pass, none of another namespace')
  t.equal(s.state.builds, 2, 'one client per Secret')
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  await settle()
  t.equal(s.state.builds, 2, 'the same resourceVersion: the client is kept')
  s.infra.secrets.set('ns/wl', secret('wl', '2'))
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  await settle()
  t.equal(s.state.builds, 3, 'a rotated Secret takes effect at the next pass')
  t.equal(s.lines.filter((l) => l.message === 'workload cluster client built from the kubeconfig Secret').length, 3)
})

t.test('a CellNodeSet gone from the cache gets no pass, and its reachable series goes', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.match(await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_reachable'), /name="pool"\} 1/)
  s.cellNodeSets.objects.clear()
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.equal(s.passes().length, 1)
  t.notMatch(await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_reachable'), /name="pool"/)
  await s.controller.stop()
})

t.test('a CellNodeSet of another pool is not served: logged at debug, nothing written, no retry', async (t) => {
  const s = setup()
  const foreign = cellNodeSet('pool')
  foreign.spec.poolUID = 'someone-else'
  s.cellNodeSets.put(foreign)
  s.controller.cellNodeSetChanged(foreign)
  await settle()
  t.match(
    s.lines.find((l) => l.message === 'not served'),
    { level: 'debug', fields: { cellNodeSet: 'ns/pool' } }
  )
  t.same(s.infra.writes, [])
  await s.clock.advance(60_000 - 1)
  t.equal(s.lines.filter((l) => l.message === 'not served').length, 1)
  await s.controller.stop()
})

t.test('stop lets the pass in progress finish, then takes no more work and the loop ends', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('a'))
  s.cellNodeSets.put(cellNodeSet('b'))
  const release = s.infra.holdWrites()
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  s.controller.cellNodeSetChanged(cellNodeSet('b'))
  await settle()
  t.same(s.controller.passing, ['ns/a'])
  let stopped = false
  let ended = false
  void s.controller.stop().then(() => (stopped = true))
  void s.running.then(() => (ended = true))
  await settle()
  t.equal(stopped, false, 'stop waits for the pass in progress')
  release()
  await settle()
  t.equal(stopped, true)
  t.equal(ended, true, 'the loop has returned')
  t.same(s.infra.writes, ['ns/a'], 'the queued CellNodeSet b got no pass')
  t.equal(s.clock.pending, 0, 'no timer left: the resync is cancelled')
})

t.test('stop while idle ends the loop at once', async (t) => {
  const s = setup({ active: false })
  await settle()
  await s.controller.stop()
  await s.running
  t.equal(s.clock.pending, 0)
})

const metric = async (s: ReturnType<typeof setup>, name: string): Promise<string> => s.metrics.registry.getSingleMetricAsString(name)

t.test("a served pass exports its pool's series; once the pool is gone (not served) they go", async (t) => {
  const s = setup()
  s.infra.poolStatus = { desiredReplicas: 2, cells: [{ name: 'pool-0', phase: 'Ready' }] }
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.match(await metric(s, 'gpuhooks_cellpool_cells'), 'gpuhooks_cellpool_cells{namespace="ns",pool="pool",phase="Ready"} 1')
  t.match(await metric(s, 'gpuhooks_cellpool_cells_desired'), 'gpuhooks_cellpool_cells_desired{namespace="ns",pool="pool"} 2')
  t.match(
    await metric(s, 'gpuhooks_workload_reachable_reason'),
    'gpuhooks_workload_reachable_reason{namespace="ns",name="pool",reason="Reachable"} 1'
  )
  s.infra.poolUid = 'a-new-pool-of-the-same-name'
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.equal(s.lines.filter((l) => l.message === 'not served').length, 1)
  for (const name of [
    'gpuhooks_cellpool_cells',
    'gpuhooks_cellpool_cells_desired',
    'gpuhooks_workload_reachable',
    'gpuhooks_workload_reachable_reason'
  ])
    t.notMatch(await metric(s, name), 'pool="pool"', `${name}: no series of the pool`)
  t.notMatch(await metric(s, 'gpuhooks_workload_reachable'), 'name="pool"')
  await s.controller.stop()
})

t.test('a replica that stands down drops every pool series; a pass that ends after leadership went exports none', async (t) => {
  const s = setup()
  s.cellNodeSets.put(cellNodeSet('pool'))
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.match(await metric(s, 'gpuhooks_cellpool_cells'), 'pool="pool"')
  s.controller.standDown()
  t.notMatch(await metric(s, 'gpuhooks_cellpool_cells'), 'pool="pool"')
  t.notMatch(await metric(s, 'gpuhooks_workload_reachable'), 'name="pool"')
  const release = s.infra.holdWrites()
  s.controller.cellNodeSetChanged(cellNodeSet('pool'))
  await settle()
  t.same(s.controller.passing, ['ns/pool'])
  s.state.active = false
  release()
  await settle()
  t.equal(s.passes().length, 2, 'the pass ended')
  t.notMatch(await metric(s, 'gpuhooks_cellpool_cells'), 'pool="pool"', 'but exported nothing')
  await s.controller.stop()
})

t.test(
  'the workload cluster regained: one Event on the pool; the same again is counted on it (or made anew once it is gone); a failed write is counted, not retried',
  async (t) => {
    const s = setup()
    const lost = {
      conditions: [
        { type: 'Reachable', status: 'False', reason: 'Unreachable', message: 'timeout', lastTransitionTime: '2026-06-01T00:00:00Z' }
      ]
    }
    const regained = `ns/pool@${POOL_UID} Normal WorkloadClusterReachable: The workload cluster is read again (it was Unreachable).`
    s.cellNodeSets.put(cellNodeSet('pool', 'wl', lost))
    s.controller.cellNodeSetChanged(cellNodeSet('pool'))
    await settle()
    t.same(s.infra.eventList(), [`${regained} x1`])
    // The fake cache still holds the old status (as an informer may, just after a write): the
    // controller compares with what its own last pass saw, so the change is not told again.
    s.controller.cellNodeSetChanged(cellNodeSet('pool'))
    await settle()
    t.same(s.infra.eventList(), [`${regained} x1`], 'not told twice')
    // A new leader term starts from the stored status: the same change again, counted on the Event.
    s.controller.standDown()
    s.controller.cellNodeSetChanged(cellNodeSet('pool'))
    await settle()
    t.same(s.infra.eventList(), [`${regained} x2`], 'one Event, x2')
    t.match(
      await metric(s, 'gpuhooks_workload_events_total'),
      'gpuhooks_workload_events_total{reason="WorkloadClusterReachable",result="counted"} 1'
    )
    // The Event expired meanwhile (the API server keeps Events an hour): a new one.
    s.infra.events.clear()
    s.controller.standDown()
    s.controller.cellNodeSetChanged(cellNodeSet('pool'))
    await settle()
    t.same(s.infra.eventList(), [`${regained} x1`])
    t.match(
      await metric(s, 'gpuhooks_workload_events_total'),
      'gpuhooks_workload_events_total{reason="WorkloadClusterReachable",result="created"} 2'
    )
    s.infra.failEvents = true
    const forbidden = { conditions: [{ ...lost.conditions[0], reason: 'Forbidden', message: 'nodes is forbidden' }] }
    s.cellNodeSets.put(cellNodeSet('pool', 'wl', forbidden))
    s.controller.standDown()
    s.controller.cellNodeSetChanged(cellNodeSet('pool'))
    await settle()
    t.match(await metric(s, 'gpuhooks_workload_events_total'), 'reason="WorkloadClusterReachable",result="failed"} 1')
    t.match(await metric(s, 'gpuhooks_workload_errors_total'), 'reason="EventWrite"} 1')
    t.match(
      s.lines.find((l) => l.message === 'event not written'),
      { level: 'warn', fields: { cellNodeSet: 'ns/pool', event: 'WorkloadClusterReachable' } }
    )
    const passes = s.passes().length
    await s.clock.advance(30_000)
    t.equal(s.passes().length, passes, 'a failed Event is no reason to run the pass again')
    await s.controller.stop()
  }
)
