/**
 * The agent's readiness: healthy and able to serve if elected. The standby of a two-replica
 * Deployment must be ready, or the chart's readiness probe would keep it unready for ever.
 */
import t from 'tap'
import { readiness } from '../../hooks/agent/runtime/probes.ts'

const synced = { stopping: false, cellNodeSetsSynced: true, cellInfrastructuresSynced: true }

t.test('a standby with synced informers is ready, and says it is not the leader', async (t) => {
  t.same(readiness({ ...synced, leader: false }), { code: 200, body: { status: 'ready', leader: false } })
})

t.test('the leader with synced informers is ready', async (t) => {
  t.same(readiness({ ...synced, leader: true }), { code: 200, body: { status: 'ready', leader: true } })
})

t.test('not ready until every informer has listed once', async (t) => {
  t.same(readiness({ ...synced, cellNodeSetsSynced: false, leader: true }), { code: 503, body: { status: 'not ready', leader: true } })
  t.same(readiness({ ...synced, cellInfrastructuresSynced: false, leader: false }), {
    code: 503,
    body: { status: 'not ready', leader: false }
  })
})

t.test('not ready while shutting down, leader or not', async (t) => {
  t.same(readiness({ ...synced, stopping: true, leader: true }), { code: 503, body: { status: 'not ready', leader: true } })
  t.same(readiness({ ...synced, stopping: true, leader: false }), { code: 503, body: { status: 'not ready', leader: false } })
})

t.test('without cell pools: the InstanceActivity informer is what counts', async (t) => {
  const alone = { stopping: false, leader: false }
  t.same(readiness({ ...alone, instanceActivitiesSynced: false }), { code: 503, body: { status: 'not ready', leader: false } })
  t.same(readiness({ ...alone, instanceActivitiesSynced: true }), { code: 200, body: { status: 'ready', leader: false } })
  t.same(readiness({ ...alone, instanceActivitiesSynced: true, stopping: true }), {
    code: 503,
    body: { status: 'not ready', leader: false }
  })
})
