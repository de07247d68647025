/**
 * The scenario of the cell pool files that run the hook and the real workload agent together
 * (`55-cellpool-agent`, `57-cellpool-dra-agent`): the test environment with KubeSwift's CRDs, a
 * workload API server (optionally with its own kube-scheduler), the agent's access there, the
 * pool namespace with its join Secret and the labelled kubeconfig Secret `wl-kubeconfig`, and the
 * agent as a real process. Also what both play of Metacontroller and the kubelets.
 */
import t from 'tap'
import { grantAgentAccess, Kubelets, startAgent, type AgentProcess } from './agent.ts'
import { preparePoolNamespace } from './cellpool.ts'
import { KUBESWIFT_CRDS, startEnv } from './env.ts'
import { isReason } from './kube.ts'
import { reader } from './reads.ts'
import { binariesDir, startWorkloadCluster } from './workload-cluster.ts'

/** Starts the scenario for pools in `namespace`; `env` goes to the hook service and the agent alike. */
export async function startCellPoolAgentScenario(namespace: string, options: { env?: Record<string, string>; scheduler?: boolean } = {}) {
  const env = await startEnv({ extraCrds: [KUBESWIFT_CRDS], ...(options.env !== undefined ? { serviceEnv: options.env } : {}) })
  const { kube, cluster } = env
  const workload = await startWorkloadCluster(cluster, binariesDir(), { scheduler: options.scheduler === true })
  const wl = workload.admin
  const driver = env.driver('gpuhooks-cellpool')
  const kubelets = new Kubelets(wl)
  // Assigned once the teardown that stops it is registered.
  // eslint-disable-next-line prefer-const -- declared before the teardown that stops it
  let agent: AgentProcess | undefined
  t.teardown(async () => {
    kubelets.stopAll()
    await agent?.stop()
    await workload.stop()
    workload.close()
    await env.stop()
  })
  await grantAgentAccess(wl)
  await preparePoolNamespace(cluster, namespace)
  await kube.create(
    { apiVersion: 'v1', resource: 'secrets', namespace },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'wl-kubeconfig', namespace, labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
      data: { value: Buffer.from(workload.agentKubeconfig()).toString('base64') }
    }
  )
  // The agent, a real process, with the liveness windows shortened.
  agent = await startAgent(cluster.kubeconfig, cluster.dir, options.env ?? {})
  const running = agent
  const infra = reader<any>(kube)

  /** The labels a cell's kubelet registers: the `--node-labels` of its rendered bootstrap Secret. */
  const registrationLabels = async (cell: string): Promise<Record<string, string>> => {
    const secret = await infra.must({ apiVersion: 'v1', resource: 'secrets', namespace, name: `${cell}-bootstrap` })
    const text = Buffer.from(String(secret.data['user-data']), 'base64').toString()
    const flag = /--node-labels (\S+)/.exec(text)
    if (flag?.[1] === undefined) throw new Error(`no --node-labels in ${cell}'s bootstrap: ${text}`)
    return Object.fromEntries(flag[1].split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
  }

  /**
   * Syncs the pool until a pass writes nothing (at most 6 passes); `after` runs after each pass. A
   * write that meets the agent's concurrent status write of the CellNodeSet (409) is what
   * Metacontroller retries on its next sync; anything else fails the test.
   */
  const sync = async (pool: string, after?: () => Promise<void>): Promise<void> => {
    for (let pass = 0; pass < 6; pass++) {
      let quiet = false
      try {
        quiet = (await driver.syncOnce({ namespace, name: pool })).writes.length === 0
      } catch (err) {
        if (!isReason(err, 'Conflict') && !/Conflict|the object has been modified/.test(String(err))) throw err
      }
      await after?.()
      if (quiet) return
    }
  }

  return {
    env,
    kube,
    cluster,
    workload,
    wl,
    kubelets,
    agent: running,
    agentLogTail: (): string => running.logTail(30),
    registrationLabels,
    /** A cell's kubelet starts with the labels of its bootstrap. */
    kubeletJoins: async (cell: string): Promise<void> => kubelets.join(cell, await registrationLabels(cell)),
    sync
  }
}
