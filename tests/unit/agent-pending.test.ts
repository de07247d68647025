/**
 * The unbound pending Pods of a workload cluster (docs/workload.md, "Bounds"): listed in pages
 * that follow continue tokens, at most AGENT_MAX_PENDING_PODS of them (past it the pool's status
 * says `truncated`, the count is of those listed, and no drain trusts the list), and once per
 * workload cluster and round, shared by every pool on that cluster.
 */
import t from 'tap'
import type { WorkloadApi } from '../../hooks/agent/model/apis.ts'
import { decide } from '../../hooks/agent/nodeset/decide/core.ts'
import { listPendingPods, MAX_PENDING_PAGES, PENDING_PAGE_SIZE, UNBOUND_PENDING } from '../../hooks/agent/nodeset/snapshot.ts'
import { workloadConnection } from '../../hooks/agent/workload/client.ts'
import { ByteBudget, WorkloadHttpError } from '../../hooks/agent/workload/http.ts'
import { cellNodeSet, emptyWorkload, secret, setup } from '../support/agent-controller-fixture.ts'
import { fakeApiServer } from '../support/fake-apiserver.ts'
import { settle } from '../support/fake-clock.ts'

const pod = (i: number): Record<string, unknown> => ({
  metadata: { name: `p${i}`, namespace: 'work' },
  spec: { containers: [{ resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
  status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
})

/** A workload cluster with `count` pending Pods served in pages; the continue token is the next index. */
function paged(count: number, calls: string[] = []): WorkloadApi {
  return {
    ...emptyWorkload,
    async listPodPage(fieldSelector, limit, token) {
      calls.push(`${fieldSelector} limit=${limit}${token === undefined ? '' : ` continue=${token}`}`)
      const from = Number(token ?? 0)
      const items = Array.from({ length: Math.max(0, Math.min(limit, count - from)) }, (_, i) => pod(from + i))
      return from + limit < count ? { items, continue: String(from + limit) } : { items }
    }
  }
}

t.test('the list follows continue tokens, a page of 500 at a time, to its end', async (t) => {
  const calls: string[] = []
  const list = await listPendingPods(paged(1200, calls), 5000)
  t.equal(PENDING_PAGE_SIZE, 500)
  t.same(calls, [`${UNBOUND_PENDING} limit=500`, `${UNBOUND_PENDING} limit=500 continue=500`, `${UNBOUND_PENDING} limit=500 continue=1000`])
  t.same(list.read, true)
  t.equal(list.items.length, 1200)
  t.equal(list.truncated, undefined)
})

t.test('at the cap the list stops, truncated, having asked only for what fits', async (t) => {
  const calls: string[] = []
  const list = await listPendingPods(paged(1200, calls), 600)
  t.same(calls, [`${UNBOUND_PENDING} limit=500`, `${UNBOUND_PENDING} limit=100 continue=500`])
  t.same([list.read, list.items.length, list.truncated], [true, 600, true])
  // A server that answers more than the limit it was asked: only what fits is kept.
  const generous: WorkloadApi = {
    ...emptyWorkload,
    listPodPage: async () => ({ items: Array.from({ length: 900 }, (_, i) => pod(i)), continue: 'x' })
  }
  const capped = await listPendingPods(generous, 600)
  t.same([capped.items.length, capped.truncated], [600, true])
})

t.test('endless pages stop at the page bound; a byte bound truncates; any other failure leaves the list unread', async (t) => {
  let asked = 0
  const endless: WorkloadApi = { ...emptyWorkload, listPodPage: async () => (asked++, { items: [], continue: 'again' }) }
  t.same(await listPendingPods(endless, 5000), { read: true, items: [], truncated: true })
  t.equal(asked, MAX_PENDING_PAGES)
  let page = 0
  const overBudget: WorkloadApi = {
    ...emptyWorkload,
    async listPodPage() {
      if (page++ === 0) return { items: [pod(0)], continue: '1' }
      throw new WorkloadHttpError('list Pods: the pass has read all it may', undefined, undefined, 'pass')
    }
  }
  t.same(await listPendingPods(overBudget, 5000), { read: true, items: [pod(0)], truncated: true })
  const failing: WorkloadApi = { ...emptyWorkload, listPodPage: () => Promise.reject(new WorkloadHttpError('list Pods: HTTP 403', 403)) }
  t.same(await listPendingPods(failing, 5000), { read: false, items: [] })
})

t.test("a truncated list: the pool's demand counts those listed and says truncated; its drains do not trust it", async (t) => {
  const input = cellNodeSet('pool') as unknown as Parameters<typeof decide>[0]
  input.spec.demand = { resources: ['nvidia.com/gpu'] }
  input.spec.nodes = [{ name: 'pool-0', instance: 'g0' }]
  const node = {
    metadata: { name: 'pool-0', labels: { 'cells.kubeswift.io/pool-uid': 'uid-pool', 'cells.kubeswift.io/instance': 'g0' } },
    status: { conditions: [{ type: 'Ready', status: 'True' }] }
  }
  const snapshot = (truncated: boolean) => ({
    reachability: { reason: 'Reachable' as const, message: '' },
    nodes: [{ node, beats: { watchedSince: 0 }, pods: { read: true, items: [] } }],
    unbound: { read: true, items: [pod(0), pod(1)], ...(truncated ? { truncated: true } : {}) }
  })
  const now = new Date('2026-06-01T00:00:00Z')
  const whole = decide(input, snapshot(false), now).status
  t.same(whole.demand, { read: true, pendingPods: 2, shapes: [{ devices: 1, memoryMiB: 0, cores: 0, pods: 2 }] })
  t.match(whole.nodes, [{ name: 'pool-0', allocations: { read: true } }])
  const cut = decide(input, snapshot(true), now).status
  t.same(cut.demand, { read: true, pendingPods: 2, shapes: [{ devices: 1, memoryMiB: 0, cores: 0, pods: 2 }], truncated: true })
  t.match(cut.nodes, [{ name: 'pool-0', allocations: { read: false } }], 'a Pod HAMi placed on it may be among those not listed')
})

t.test('the pools of one workload cluster share one list per round; another cluster lists its own', async (t) => {
  const s = setup({ bounds: { maxPendingPods: 600 } })
  const calls = new Map<string, string[]>()
  s.state.workloadFor = (server) => {
    const seen = calls.get(server) ?? []
    calls.set(server, seen)
    return paged(1200, seen)
  }
  s.infra.secrets.set('ns/other', secret('other', '1', 'https://other.example'))
  for (const [name, ref] of [
    ['a', 'wl'],
    ['b', 'wl'],
    ['c', 'other']
  ] as const) {
    s.cellNodeSets.put(cellNodeSet(name, ref))
    s.controller.cellNodeSetChanged(cellNodeSet(name, ref))
  }
  await settle()
  t.same(s.infra.writes.sort(), ['ns/a', 'ns/b', 'ns/c'])
  t.equal(calls.get('https://10.0.0.1')?.length, 2, 'a and b: one list of two pages for both')
  t.equal(calls.get('https://other.example')?.length, 2, 'c: its own')
  t.match(await s.metrics.registry.getSingleMetricAsString('gpuhooks_workload_errors_total'), 'reason="PendingPodsTruncated"} 2')
  t.match(
    s.lines.filter((l) => l.message === 'pending Pods truncated: only those listed count as demand').map((l) => l.fields),
    [
      { cluster: 'ns/wl', listed: 600, max: 600 },
      { cluster: 'ns/other', listed: 600, max: 600 }
    ]
  )
  s.controller.cellNodeSetChanged(cellNodeSet('a'))
  await settle()
  t.equal(calls.get('https://10.0.0.1')?.length, 4, 'listed anew in the next round')
  await s.controller.stop()
})

t.test('over HTTPS: limit and continue are sent and metadata.continue is followed', async (t) => {
  // The API server may answer fewer Pods than the limit (it filters a field selector after reading a page).
  const server = await fakeApiServer((req, res) => {
    const from = Number(new URL(req.url ?? '/', 'https://x').searchParams.get('continue') ?? 0)
    const items = [pod(from), pod(from + 1)].slice(0, 3 - from)
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ kind: 'PodList', metadata: from + 2 < 3 ? { continue: String(from + 2) } : {}, items }))
  })
  t.teardown(() => server.close())
  const connection = workloadConnection(server.kubeconfig(), { callTimeoutMs: 10_000, maxAnswerBytes: 1 << 20 })
  t.teardown(() => connection.close())
  const list = await listPendingPods(connection.api({ signal: new AbortController().signal, budget: new ByteBudget(1 << 20) }), 5000)
  t.same(
    server.seen.map((r) => r.url),
    [
      '/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%3DPending&limit=500',
      '/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cstatus.phase%3DPending&limit=500&continue=2'
    ]
  )
  t.same(
    list.items.map((p) => (p as { metadata: { name: string } }).metadata.name),
    ['p0', 'p1', 'p2']
  )
  t.equal(list.truncated, undefined)
})
