/**
 * Metacontroller's part on a real node: where the API server is static, a driver's settle is
 * enough; on a node the kubelet changes the Pod on its own time (scheduled, pulled, started), and
 * Metacontroller syncs the parent on each of those watch events. {@link driveInstance} does the
 * same by syncing until the Instance reaches the state a test waits for.
 */
import type { ClusterEnv } from './env.ts'
import type { ParentRef } from './driver.ts'

type Obj = any

/**
 * Syncs the Instance (one pass at a time, as a watch event would) until `until` holds on it, and
 * returns it; fails after `timeoutMs` with its last status and its Pod's.
 */
export async function driveInstance(
  env: ClusterEnv,
  ref: Required<Pick<ParentRef, 'namespace' | 'name'>>,
  what: string,
  until: (instance: Obj) => boolean,
  timeoutMs = 180_000
): Promise<Obj> {
  const driver = env.driver('gpuhooks-instance')
  const deadline = Date.now() + timeoutMs
  for (;;) {
    await driver.syncOnce(ref)
    const got = await env.cluster.kubectl(['get', 'instance', ref.name, '-n', ref.namespace, '-o', 'json'])
    const instance = JSON.parse(got.stdout)
    if (until(instance)) return instance
    if (Date.now() > deadline) {
      const pod = await env.cluster.kubectl(['get', 'pod', ref.name, '-n', ref.namespace, '-o', 'jsonpath={.status}'], { allowFail: true })
      throw new Error(
        `${ref.namespace}/${ref.name}: not ${what} after ${timeoutMs} ms; status ${JSON.stringify(instance.status)}; Pod status ${pod.stdout || pod.stderr}`
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}
