import t from 'tap'
import type { Informer, KubernetesObject } from '@kubernetes/client-node'
import { startInformer } from '../../hooks/agent/runtime/informer.ts'

/**
 * An informer whose starts the test settles by hand: each start is a list that succeeds, fails
 * as an error event (as client-node reports a failed list), or rejects.
 */
function fakeInformer(outcomes: Array<'list' | 'list error' | 'reject'>) {
  const handlers = new Map<string, Array<(arg?: unknown) => void>>()
  let starts = 0
  const emit = (verb: string, arg?: unknown): void => {
    for (const h of handlers.get(verb) ?? []) h(arg)
  }
  const informer = {
    on(verb: string, cb: (arg?: unknown) => void) {
      handlers.set(verb, [...(handlers.get(verb) ?? []), cb])
    },
    off() {},
    async start() {
      const outcome = outcomes[starts] ?? 'list'
      starts += 1
      emit('connect')
      if (outcome === 'reject') throw new Error('connection refused')
      if (outcome === 'list error') emit('error', new Error('forbidden'))
    },
    async stop() {
      // client-node aborts the watch, and reports the abort as an error.
      emit('error', new Error('The operation was aborted'))
    }
  }
  return { informer: informer as unknown as Informer<KubernetesObject>, emit, starts: () => starts }
}

function recorder() {
  const warnings: string[] = []
  const log = {
    warn: (_obj: unknown, message: string) => {
      warnings.push(message)
    },
    debug: () => {}
  }
  return { log: log as unknown as Parameters<typeof startInformer>[0], warnings }
}

/** A scheduler that holds restarts until the test runs them. */
function heldRestarts() {
  const pending: Array<() => void> = []
  return {
    schedule: (restart: () => void) => {
      pending.push(restart)
    },
    runAll: () => {
      for (const restart of pending.splice(0)) restart()
    },
    count: () => pending.length
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** An informer started with held restarts, a recording log and a stop switch; the first start settled. */
async function started(outcomes: Array<'list' | 'list error' | 'reject'>, what = 'cellnodesets') {
  const fake = fakeInformer(outcomes)
  const { log, warnings } = recorder()
  const restarts = heldRestarts()
  const seen: string[] = []
  let stopping = false
  const state = startInformer(
    log,
    what,
    fake.informer,
    (o) => seen.push(o.metadata?.name ?? ''),
    () => stopping,
    restarts.schedule
  )
  await settle()
  return {
    fake,
    warnings,
    restarts,
    seen,
    state,
    stop: () => {
      stopping = true
    }
  }
}

t.test('a start that lists counts as synced, and changes reach the handler', async (t) => {
  const { fake, warnings, seen, state } = await started(['list'])
  t.equal(state.synced(), true)
  fake.emit('add', { metadata: { name: 'a' } })
  fake.emit('update', { metadata: { name: 'b' } })
  fake.emit('delete', { metadata: { name: 'c' } })
  t.same(seen, ['a', 'b', 'c'])
  t.same(warnings, [])
})

const failedStarts = [
  { name: 'a list that fails (an error event while the start resolves)', first: 'list error', warning: 'informer stopped; restarting' },
  { name: 'a start that rejects', first: 'reject', warning: 'informer start failed; retrying' }
] as const

for (const c of failedStarts) {
  t.test(`${c.name} is not synced and is retried; the restart that lists is synced`, async (t) => {
    const { fake, warnings, restarts, state } = await started([c.first, 'list'], 'cellinfrastructures')
    t.equal(state.synced(), false, 'not synced after the failed start')
    t.same(warnings, [c.warning])
    t.equal(restarts.count(), 1, 'one restart scheduled')
    restarts.runAll()
    await settle()
    t.equal(fake.starts(), 2)
    t.equal(state.synced(), true)
  })
}

t.test('an error while running restarts the informer', async (t) => {
  const { fake, warnings, restarts } = await started(['list', 'list'])
  fake.emit('error', new Error('watch closed by the server'))
  t.same(warnings, ['informer stopped; restarting'])
  restarts.runAll()
  await settle()
  t.equal(fake.starts(), 2)
})

t.test('after stop, the aborted watch is neither logged nor restarted', async (t) => {
  const { fake, warnings, restarts, stop } = await started(['list'])
  stop()
  await fake.informer.stop()
  t.same(warnings, [], 'nothing logged')
  t.equal(restarts.count(), 0, 'no restart scheduled')
  t.equal(fake.starts(), 1)
})

t.test('a restart already scheduled when the agent stops does not start the informer', async (t) => {
  const { fake, restarts, stop } = await started(['list error'], 'cellinfrastructures')
  t.equal(restarts.count(), 1)
  stop()
  restarts.runAll()
  await settle()
  t.equal(fake.starts(), 1)
})
