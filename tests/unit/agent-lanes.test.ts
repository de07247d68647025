/**
 * Passes isolated from each other (docs/workload.md, "Bounds"), with fake clusters and a fake
 * clock: a workload cluster that never answers holds only the pools that name it, its pass is
 * abandoned at the deadline and reported in its pool's status and metrics, and not retried
 * before the resync; one namespace holds at most its share of the workers; the pools of one
 * cluster run one after another and read their Secret once per round.
 */
import t from 'tap'
import type { WorkloadApi } from '../../hooks/agent/model/apis.ts'
import { cellNodeSet, emptyWorkload, secret, setup } from '../support/agent-controller-fixture.ts'
import { settle } from '../support/fake-clock.ts'

/** A workload cluster that accepts every call and never answers; `asked` counts the calls. */
function silent(): WorkloadApi & { asked: number } {
  const never = <T>(): Promise<T> => {
    api.asked++
    return new Promise<T>(() => {})
  }
  const api = {
    asked: 0,
    listNodes: () => never<unknown[]>(),
    getNode: () => never<unknown>(),
    getNodeLease: () => never<unknown>(),
    listPods: () => never<unknown[]>(),
    listPodPage: () => never<{ items: unknown[] }>(),
    listResourceSlices: () => never<unknown[]>(),
    listResourceClaimPage: () => never<{ items: unknown[] }>(),
    getDeviceClass: () => never<unknown>(),
    patchNode: () => never<void>(),
    deleteNode: () => never<void>()
  }
  return api
}

const reachable = (status: unknown): unknown =>
  (status as { conditions?: { type: string }[] } | undefined)?.conditions?.find((c) => c.type === 'Reachable')

t.test('a cluster that never answers holds only its own pool; at the deadline its pass is abandoned and reported', async (t) => {
  const s = setup({ resyncMs: 15_000, bounds: { timeoutMs: 10_000 } })
  const slow = silent()
  s.state.workloadFor = (server) => (server === 'https://slow.example' ? slow : emptyWorkload)
  s.infra.secrets.set('ns/slow', secret('slow', '1', 'https://slow.example'))
  s.cellNodeSets.put(cellNodeSet('held', 'slow'))
  s.cellNodeSets.put(cellNodeSet('free', 'wl'))
  s.controller.cellNodeSetChanged(cellNodeSet('held', 'slow'))
  s.controller.cellNodeSetChanged(cellNodeSet('free'))
  await settle()
  t.same(s.infra.writes, ['ns/free'], 'the other pool is served while the slow one waits for its cluster')
  t.same(s.controller.passing, ['ns/held'])
  t.ok(slow.asked > 0)

  await s.clock.advance(9_999)
  t.same(s.infra.writes, ['ns/free'], 'not abandoned before its deadline')
  await s.clock.advance(1)
  t.same(s.infra.writes, ['ns/free', 'ns/held'], 'abandoned at 10 s, and its status written')
  t.same(s.controller.passing, [])
  t.match(reachable(s.infra.statuses.get('ns/held')), {
    status: 'False',
    reason: 'Unreachable',
    message: 'the pass took longer than 10 s (AGENT_PASS_TIMEOUT_SECONDS) and was abandoned'
  })
  t.match(await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_errors_total'), 'reason="PassDeadline"} 1')
  t.match(
    s.lines.find((l) => l.message === 'pass' && l.fields.cellNodeSet === 'ns/held'),
    { level: 'warn', fields: { overran: true, reachable: 'Unreachable' } }
  )

  const asked = slow.asked
  await s.clock.advance(4_999)
  t.equal(slow.asked, asked, 'not asked again before the resync')
  await s.clock.advance(1)
  t.ok(slow.asked > asked, 'asked again at the resync')
  t.equal(s.passes().filter((p) => p === 'ns/free').length, 2, 'and the other pool passed again at once, beside it')
  await s.clock.advance(10_000)
  await s.controller.stop()
})

t.test('one namespace holds at most its share of the workers; another namespace is served meanwhile', async (t) => {
  const s = setup({ bounds: { workers: 3, namespaceWorkers: 2, timeoutMs: 10_000 } })
  const slow = silent()
  s.state.workloadFor = (server) => (server.startsWith('https://slow') ? slow : emptyWorkload)
  for (const name of ['a', 'b', 'c']) {
    s.infra.secrets.set(`ns/${name}`, secret(name, '1', `https://slow-${name}.example`))
    s.cellNodeSets.put(cellNodeSet(name, name))
    s.controller.cellNodeSetChanged(cellNodeSet(name, name))
  }
  s.infra.secrets.set('other/wl', secret('wl', '1', 'https://10.0.0.1', 'other'))
  s.cellNodeSets.put(cellNodeSet('free', 'wl', undefined, 'other'))
  s.controller.cellNodeSetChanged(cellNodeSet('free', 'wl', undefined, 'other'))
  await settle()
  t.same(s.controller.passing.sort(), ['ns/a', 'ns/b'], 'two of the three slow clusters of ns, the third waits')
  t.same(s.infra.writes, ['other/free'], 'the last worker serves the other namespace')
  await s.clock.advance(10_000)
  t.same(s.controller.passing, ['ns/c'], 'the third starts once one of its namespace ends')
  await s.clock.advance(10_000)
  t.same(s.infra.writes.sort(), ['ns/a', 'ns/b', 'ns/c', 'other/free'])
  await s.controller.stop()
})

t.test('the pools of one cluster pass one after another in one round, reading their Secret once', async (t) => {
  const s = setup()
  const order: string[] = []
  let release = (): void => {}
  const first = new Promise<void>((resolve) => (release = resolve))
  s.state.workload = {
    ...emptyWorkload,
    async listNodes() {
      order.push(`start ${order.length}`)
      if (order.length === 1) await first
      order.push(`end ${order.length}`)
      return []
    }
  }
  for (const name of ['a', 'b']) {
    s.cellNodeSets.put(cellNodeSet(name))
    s.controller.cellNodeSetChanged(cellNodeSet(name))
  }
  await settle()
  t.same(s.controller.passing, ['ns/a'], 'b waits for a: they share the cluster')
  release()
  await settle()
  t.same(order, ['start 0', 'end 1', 'start 2', 'end 3'], 'never two passes of one cluster at once')
  t.same(s.infra.secretReads, ['ns/wl'], 'the Secret read once for the round')
  t.same(s.infra.writes, ['ns/a', 'ns/b'])
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  await settle()
  t.same(s.infra.secretReads, ['ns/wl', 'ns/wl'], 'and read again in the next round')
  await s.controller.stop()
})

t.test('a lane whose replica stops leading gives its keys back; they run once it leads again', async (t) => {
  const s = setup()
  const release = s.infra.holdWrites()
  for (const name of ['a', 'b']) {
    s.cellNodeSets.put(cellNodeSet(name))
    s.controller.cellNodeSetChanged(cellNodeSet(name))
  }
  await settle()
  t.same(s.controller.passing, ['ns/a'])
  s.state.active = false
  release()
  await settle()
  t.same(s.infra.writes, ['ns/a'], 'b did not run while not leading')
  s.state.active = true
  s.controller.wake()
  await settle()
  t.same(s.infra.writes, ['ns/a', 'ns/b'])
  await s.controller.stop()
})
