// A workload cluster that never answers holds only its own pool (docs/workload.md, "Bounds"): the
// agent runs as a real process against a real infrastructure API server and a real workload
// kube-apiserver; one pool's kubeconfig names a server that accepts connections and never
// answers (a TCP listener in place of an API server), another pool's the workload API server.
// Each call's own deadline is set long (300 s), so only the pass deadline (4 s here) can free the
// agent: the second pool is served while the first is held, the held pass is abandoned and its
// pool reads Unreachable, its connections are closed, and the agent keeps its Lease and its
// readiness throughout. Everything is polled for; no assertion depends on how long a step takes.
import { readFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { grantAgentAccess, startAgent, type AgentProcess } from './support/agent.ts'
import { passesOf, prepareAgentInfra, untilAgent } from './support/agent-infra.ts'
import { startCluster } from './support/cluster.ts'
import { KubeClient, loadKubeconfig } from './support/kube.ts'
import { binariesDir, startWorkloadCluster, tokenKubeconfig } from './support/workload-cluster.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'tenant'

const binDir = binariesDir()
const cluster = await startCluster({ binDir })
const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
const workload = await startWorkloadCluster(cluster, binDir)

// The silent server: every connection is accepted, counted, and never answered.
const open = new Set<Socket>()
let accepted = 0
let closedByAgent = 0
const silent = createServer((socket) => {
  accepted++
  open.add(socket)
  socket.on('close', () => {
    if (open.delete(socket)) closedByAgent++
  })
  socket.on('error', () => {})
  // Read (and drop) what the agent sends, so that its closing the connection is seen.
  socket.resume()
})
await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
const silentServer = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`

// Assigned once the teardown that stops it is registered.
// eslint-disable-next-line prefer-const -- declared before the teardown that stops it
let agent: AgentProcess | undefined
t.teardown(async () => {
  if (agent !== undefined && agent.child.exitCode === null) agent.child.kill('SIGKILL')
  const sockets = [...open]
  open.clear()
  for (const socket of sockets) socket.destroy()
  silent.close()
  await workload.stop()
  workload.close()
  kube.close()
  await cluster.stop()
})

await grantAgentAccess(workload.admin)
const { cnsRef, createPool, createSecret, createCellNodeSet } = await prepareAgentInfra(cluster, kube, NS)
const ca = readFileSync(join(cluster.dir, 'ca.crt'))
await createSecret('silent', true, tokenKubeconfig(silentServer, ca, workload.agentToken))
await createSecret('workload', true, workload.agentKubeconfig())

agent = await startAgent(cluster.kubeconfig, cluster.dir, { AGENT_CALL_TIMEOUT_SECONDS: '300', AGENT_PASS_TIMEOUT_SECONDS: '4' })
const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs?: number): Promise<T> =>
  untilAgent(agent, what, check, timeoutMs)
const reachable = async (name: string): Promise<Loose> =>
  ((await kube.get(cnsRef(name))).body as Loose).status?.conditions?.find((c: Loose) => c.type === 'Reachable')
const ready = async (): Promise<number> => {
  try {
    return (await fetch(`http://127.0.0.1:${agent?.port ?? 0}/readyz`)).status
  } catch {
    return 0
  }
}
const leaseRenewTime = async (): Promise<string> =>
  String(
    (
      (
        await kube.get({
          apiVersion: 'coordination.k8s.io/v1',
          resource: 'leases',
          namespace: 'default',
          name: 'gpuhooks-workload-agent'
        })
      ).body as Loose
    ).spec.renewTime
  )

t.test('a pool whose server never answers holds only itself; its pass is abandoned at the deadline', async (t) => {
  await until('/readyz 200', async () => ((await ready()) === 200 ? true : undefined))
  await createCellNodeSet('held', await createPool('held'), 'silent')
  await until('the agent to be held by the silent server', async () => (open.size > 0 ? true : undefined))

  // The held call has its own deadline of 300 s: only another lane can serve this pool meanwhile.
  await createCellNodeSet('free', await createPool('free'), 'workload')
  const free = await until('the other pool served while the first is held', async () => {
    const condition = await reachable('free')
    return condition?.status === 'True' ? condition : undefined
  })
  t.match(free, { reason: 'Reachable' })

  const held = await until('the held pass abandoned and reported', async () => {
    const condition = await reachable('held')
    return condition?.status === 'False' ? condition : undefined
  })
  t.match(held, { reason: 'Unreachable', message: 'the pass took longer than 4 s (AGENT_PASS_TIMEOUT_SECONDS) and was abandoned' })
  await until('the abandoned connection closed by the agent', async () => (closedByAgent > 0 ? true : undefined))
  t.ok(accepted > 0)
})

t.test(
  'while the silent server keeps holding passes, the other pool passes again and again, and the agent leads and stays ready',
  async (t) => {
    const before = passesOf(agent, `${NS}/free`)
    const renewed = await leaseRenewTime()
    await until('three more passes of the other pool', async () => (passesOf(agent, `${NS}/free`) >= before + 3 ? true : undefined))
    await until('the Lease renewed', async () => ((await leaseRenewTime()) !== renewed ? true : undefined))
    t.equal(await ready(), 200)
    const metrics = await (await fetch(`http://127.0.0.1:${agent?.port ?? 0}/metrics`)).text()
    t.match(metrics, /gpuhooks_workload_leader 1/)
    t.match(metrics, /gpuhooks_workload_errors_total\{reason="PassDeadline"\} [1-9]/)
    t.match(metrics, /gpuhooks_workload_reachable\{namespace="tenant",name="free"\} 1/)
    t.match(metrics, /gpuhooks_workload_reachable\{namespace="tenant",name="held"\} 0/)
  }
)
