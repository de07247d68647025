/**
 * The agent's `/readyz` answer. Readiness means "this process is healthy and could serve if it
 * were elected": both informers have listed once and it is not shutting down. Leadership is
 * reported but does not count, so the standby of a two-replica Deployment is ready too (a
 * readiness that required the Lease would leave one replica unready for ever and make
 * `helm install --wait` and rollouts hang); which replica runs passes is the Lease's business.
 */

/** What `/readyz` looks at. */
export interface ReadinessState {
  stopping: boolean
  cellNodeSetsSynced: boolean
  secretsSynced: boolean
  leader: boolean
}

/** The `/readyz` status code and JSON body. */
export function readiness(state: ReadinessState): { code: 200 | 503; body: { status: 'ready' | 'not ready'; leader: boolean } } {
  const ready = !state.stopping && state.cellNodeSetsSynced && state.secretsSynced
  return { code: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not ready', leader: state.leader } }
}
