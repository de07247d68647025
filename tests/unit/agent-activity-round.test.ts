/**
 * The activity controller against a real loopback HTTP server playing Prometheus's
 * `/api/v1/query` (hooks/agent/activity): one query per round for every InstanceActivity, the
 * status writes only when something changed, the stops carried out once with their Event; and
 * the client's bounds against answers too large, slow, failed or junk. The controller's clock is
 * moved by hand: a round is a step of the test, not a wait.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { ActivityController } from '../../hooks/agent/activity/controller.ts'
import type { ActivityApi } from '../../hooks/agent/activity/client.ts'
import type { PatchOp } from '../../hooks/agent/activity/decide.ts'
import { prometheusClient, type QueryPrometheus } from '../../hooks/agent/activity/prometheus.ts'
import { createAgentMetrics } from '../../hooks/agent/runtime/metrics.ts'
import { FakeClock, settle } from '../support/fake-clock.ts'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** A loopback Prometheus; `queries` holds the `query` parameter of every request. */
async function fakePrometheus(t: Test, handler: Handler): Promise<{ url: string; queries: string[] }> {
  const queries: string[] = []
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname !== '/prom/api/v1/query') {
      res.writeHead(404).end()
      return
    }
    queries.push(url.searchParams.get('query') ?? '')
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/prom`, queries }
}

const vector = (result: unknown[]): string => JSON.stringify({ status: 'success', data: { resultType: 'vector', result } })
const N = 40
const activities = (): Record<string, any>[] =>
  Array.from({ length: N }, (_, i) => ({
    metadata: {
      name: `ws-${i}`,
      namespace: 'team',
      ownerReferences: [{ apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', name: `ws-${i}`, uid: `i-${i}`, controller: true }]
    },
    spec: { instanceUID: `i-${i}`, podName: `ws-${i}`, podUID: `p-${i}`, idleThreshold: 5 }
  }))

/** Waits, without a timer, until `check` holds (the loopback I/O completes in some turns of the loop). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !check(); i++) await new Promise((resolve) => setImmediate(resolve))
  if (!check()) throw new Error('never happened')
}

function world(objects: Record<string, any>[], query: QueryPrometheus | undefined, stops: boolean) {
  const clock = new FakeClock(Date.parse('2026-12-03T10:00:00Z'))
  const calls = { status: 0, patches: [] as { name: string; patch: PatchOp[] }[], events: [] as string[], rounds: 0 }
  const instances = new Map(
    objects.map((o) => [o.metadata.name, { metadata: { uid: o.spec.instanceUID, resourceVersion: '1' }, spec: {} }])
  )
  const api: ActivityApi = {
    getInstance: async (_ns, name) => instances.get(name),
    // The Pods as they run: ws-i is uid p-i.
    getPod: async (_ns, name) => ({ metadata: { name, uid: `p-${name.slice(3)}` } }),
    async patchInstance(_ns, name, patch) {
      calls.patches.push({ name, patch })
      const instance = instances.get(name)
      if (instance !== undefined) instance.spec = { stop: true }
    },
    async patchStatus(_ns, name, status) {
      calls.status += 1
      const object = objects.find((o) => o.metadata.name === name)
      if (object !== undefined) object.status = status
    },
    event: async (_i, reason) => {
      calls.events.push(reason)
      return `e-${calls.events.length}`
    },
    recountEvent: async () => {}
  }
  const log = (message: string): void => {
    if (message === 'activity round') calls.rounds += 1
  }
  const metrics = createAgentMetrics()
  const controller = new ActivityController({
    activities: { get: () => undefined, list: () => objects },
    api,
    query,
    config: { prometheusURL: 'http://prom', stops, roundMs: 60_000, refreshMs: 300_000, queryTimeoutMs: 5000, maxAnswerBytes: 1 << 20 },
    active: () => true,
    clock,
    metrics,
    log: { debug: (_f, m) => log(m), info: (_f, m) => log(m), warn: (_f, m) => log(m), error: (_f, m) => log(m) }
  })
  const running = controller.run()
  return { clock, calls, controller, running, metrics }
}

t.test(`one query per round for ${N} Instances; statuses written when they change`, async (t) => {
  const prom = await fakePrometheus(t, (_req, res) => {
    const result = Array.from({ length: N }, (_, i) => ({
      metric: { namespace: 'team', instance_name: `ws-${i}`, instance_uid: `i-${i}`, node: 'n1' },
      value: [1, i % 2 === 0 ? '50' : '0']
    }))
    res.writeHead(200, { 'content-type': 'application/json' }).end(vector(result))
  })
  const objects = activities()
  const w = world(objects, prometheusClient(prom.url, { timeoutMs: 5000, maxAnswerBytes: 1 << 20 }), false)
  await until(() => w.calls.rounds === 1)
  t.equal(prom.queries.length, 1, 'one query for the first round')
  t.match(prom.queries[0], /max by \(namespace, instance_name, instance_uid\) \(max_over_time\(.*\[120s\]\)\)/)
  t.equal(w.calls.status, N, 'every status written once')
  t.match(objects[0]?.status, { conditions: [{ reason: 'Observed', status: 'True' }] })
  t.equal(objects[0]?.status.lastActiveTime, '2026-12-03T10:00:00Z')
  t.equal(objects[1]?.status.lastActiveTime, undefined, 'never active: no lastActiveTime')
  const exported = await w.metrics.registry.metrics()
  t.match(exported, `gpuhooks_activity_instances{state="active"} ${N / 2}`)
  t.match(exported, `gpuhooks_activity_instances{state="idle"} ${N / 2}`)
  t.match(exported, `gpuhooks_activity_status_writes_total ${N}`)
  t.match(exported, 'gpuhooks_activity_query_seconds_count 1')
  await w.clock.advance(60_000)
  await until(() => w.calls.rounds === 2)
  t.equal(prom.queries.length, 2, 'one query for the second round')
  t.equal(w.calls.status, N, 'nothing but the time moved: no write')
  for (let round = 3; round <= 5; round++) {
    await w.clock.advance(60_000)
    await until(() => w.calls.rounds === round)
  }
  t.equal(prom.queries.length, 5)
  t.equal(w.calls.status, 2 * N, 'the refresh: each status once more before the next round would find it 300 s old')
  await w.controller.stop()
  await w.clock.advance(60_000)
  await w.running
})

t.test('Prometheus down: Observed False once for all, then nothing', async (t) => {
  const objects = activities()
  const w = world(objects, async () => ({ ok: false, message: 'connect ECONNREFUSED 127.0.0.1:1' }), false)
  await until(() => w.calls.rounds === 1)
  t.equal(w.calls.status, N)
  t.match(objects[3]?.status, { conditions: [{ status: 'False', reason: 'PrometheusUnreachable' }] })
  t.equal(objects[3]?.status.observedTime, undefined, 'no observation made up')
  for (let round = 2; round <= 11; round++) {
    await w.clock.advance(60_000)
    await until(() => w.calls.rounds === round)
  }
  t.equal(w.calls.status, N, 'no write while it stays down')
  await w.controller.stop()
  await w.clock.advance(60_000)
  await w.running
})

t.test('a requested stop is carried out once, with its Event; without observation too', async (t) => {
  const objects = activities().slice(0, 3)
  objects[0]!.spec.stop = { requested: true, reason: 'Idle', at: '2026-12-03T09:59:00Z' }
  objects[1]!.spec.stop = { requested: true, reason: 'MaxRunDuration', at: '2026-12-03T09:59:00Z' }
  objects[1]!.spec.podUID = 'an-old-pod'
  const w = world(objects, undefined, true)
  await until(() => w.calls.patches.length === 1 && w.calls.events.length === 1)
  t.same(
    w.calls.patches.map((p) => p.name),
    ['ws-0'],
    'the request for an old Pod is ignored'
  )
  t.same(w.calls.events, ['IdleStopped'])
  const exported = await w.metrics.registry.metrics()
  t.match(exported, 'gpuhooks_activity_stops_total{reason="IdleStopped"} 1')
  t.match(exported, 'gpuhooks_activity_stops_ignored_total 1')
  t.match(exported, 'gpuhooks_workload_events_total{reason="IdleStopped",result="created"} 1')
  w.controller.changed(objects[0])
  await w.clock.advance(60_000)
  await settle()
  t.equal(w.calls.patches.length, 1, 'the Instance stopped already is left alone')
  t.equal(w.calls.status, 0, 'no observation: no status written')
  await w.controller.stop()
  await w.clock.advance(60_000)
  await w.running
})

const bounded = { timeoutMs: 300, maxAnswerBytes: 64 * 1024 }

t.test('the client: too large, failed, junk and silent answers are no observation; nothing throws', async (t) => {
  const cases: [string, Handler, RegExp][] = [
    [
      'too large',
      (_q, res) => res.writeHead(200).end(vector(Array.from({ length: 5000 }, () => ({ metric: { x: 'y'.repeat(20) } })))),
      /larger than 65536/
    ],
    [
      'too large, streamed without a length',
      (_q, res) => {
        res.writeHead(200)
        for (let i = 0; i < 100; i++) res.write('x'.repeat(1024))
        res.end()
      },
      /larger than 65536/
    ],
    [
      'an error',
      (_q, res) => res.writeHead(422).end('{"status":"error","errorType":"execution","error":"query timed out"}'),
      /HTTP 422.*query timed out/
    ],
    ['junk', (_q, res) => res.writeHead(200).end('{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}'), /not a vector/],
    ['silence', () => {}, /no answer within 300 ms/]
  ]
  for (const [what, handler, message] of cases) {
    const prom = await fakePrometheus(t, handler)
    const answer = await prometheusClient(prom.url, bounded)('up')
    t.match(answer, { ok: false, message }, what)
  }
  const refused = await prometheusClient('http://127.0.0.1:1', bounded)('up')
  t.match(refused, { ok: false }, 'nothing listening')
})
