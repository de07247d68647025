/**
 * The Event the agent writes, as the API server receives it, and the deadline every API call of
 * the agent gets (AGENT_CALL_TIMEOUT_SECONDS).
 */
import t from 'tap'
import { deadline } from '../../hooks/agent/runtime/clock.ts'
import { EVENT_SOURCE, MAX_EVENT_MESSAGE, eventBody, recountPatch } from '../../hooks/agent/runtime/events.ts'

const cns = { apiVersion: 'cells.kubeswift.io/v1alpha1', kind: 'CellNodeSet', namespace: 'ns', name: 'pool', uid: 'u-1' }
const NOW = new Date('2026-03-04T05:06:07Z')

t.test('an Event names its object, is generated after it in its namespace, and is first and last seen now', async (t) => {
  t.same(eventBody(cns, 'Warning', 'NodesLeftBehind', 'pool-0 is left', NOW), {
    metadata: { generateName: 'pool.', namespace: 'ns' },
    involvedObject: cns,
    type: 'Warning',
    reason: 'NodesLeftBehind',
    message: 'pool-0 is left',
    source: { component: EVENT_SOURCE },
    firstTimestamp: NOW,
    lastTimestamp: NOW,
    count: 1
  })
})

t.test('a long message is cut, and the Event holds no reference to what it was built from', async (t) => {
  const body = eventBody(cns, 'Normal', 'NodeSwept', 'x'.repeat(5000), NOW)
  t.equal(body.message?.length, MAX_EVENT_MESSAGE)
  t.not(body.involvedObject, cns)
  t.not(body.firstTimestamp, NOW)
})

t.test('a call that answers in time resolves with its answer', async (t) => {
  t.equal(await deadline('get Node n', Promise.resolve('node'), 10_000), 'node')
})

t.test('a call that never answers fails with an error naming what it was and the deadline', async (t) => {
  await t.rejects(deadline('get Node n', new Promise(() => {}), 20), { message: 'get Node n: no answer within 20 ms' })
})

t.test("a call's own error comes through as it is", async (t) => {
  const refused = Object.assign(new Error('forbidden'), { code: 403 })
  await t.rejects(deadline('list Pods', Promise.reject(refused), 10_000), refused)
})

t.test('an Event that happens again is counted on the one written: its count and last time, as a merge patch', async (t) => {
  t.same(recountPatch(3, NOW), { count: 3, lastTimestamp: '2026-03-04T05:06:07Z' })
})
