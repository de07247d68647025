/**
 * The infrastructure cluster side of the scenarios that run the workload agent for real: the
 * CellNodeSet and CellInfrastructure CRDs and a GPUCellPool stand-in (any spec), one namespace,
 * and the pools, kubeconfig Secrets and CellNodeSets as the cellpool hook would have them; and
 * the agent's log read back (its passes, a wait that shows the log when it fails).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createKubeconfigSecret, writeStandInPoolCrd, type AgentProcess } from './agent.ts'
import { cellNodeSetRef } from './cellpool.ts'
import type { TestCluster } from './cluster.ts'
import { eventually, installCrds } from './env.ts'
import type { KubeClient, ResourceRef } from './kube.ts'

const ROOT = join(import.meta.dirname, '..', '..', '..')
const GROUP = 'cells.kubeswift.io/v1alpha1'

/** Scenario objects are loose views. */
type Loose = any

/** What a scenario creates in the infrastructure cluster's namespace. */
export interface AgentInfra {
  cnsRef: (name: string) => ResourceRef
  /** A GPUCellPool (the stand-in); its uid. */
  createPool: (name: string) => Promise<string>
  /** A kubeconfig Secret under the key `value`, with the admin's opt-in label when `optIn`. */
  createSecret: (name: string, optIn: boolean, kubeconfig: string) => Promise<void>
  /** The pool's CellNodeSet naming `secret`, with `spec` added. */
  createCellNodeSet: (pool: string, poolUID: string, secret: string, spec?: Loose) => Promise<void>
}

/** Installs the CRDs and makes `namespace` in `cluster`; answers the makers of the namespace's objects. */
export async function prepareAgentInfra(cluster: TestCluster, kube: KubeClient, namespace: string): Promise<AgentInfra> {
  const poolCrdFile = writeStandInPoolCrd(cluster.dir)
  await installCrds(cluster, [
    join(ROOT, 'crds', 'cellnodesets.cells.kubeswift.io.yaml'),
    join(ROOT, 'crds', 'cellinfrastructures.cells.kubeswift.io.yaml'),
    poolCrdFile
  ])
  await kube.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
  const cnsRef = (name: string): ResourceRef => cellNodeSetRef(namespace, name)
  return {
    cnsRef,
    createPool: async (name) => {
      const created = await kube.create(
        { apiVersion: GROUP, resource: 'gpucellpools', namespace },
        { apiVersion: GROUP, kind: 'GPUCellPool', metadata: { name, namespace }, spec: {} }
      )
      return String((created.body as Loose).metadata.uid)
    },
    createSecret: (name, optIn, kubeconfig) => createKubeconfigSecret(kube, namespace, name, kubeconfig, optIn),
    createCellNodeSet: async (pool, poolUID, secret, spec = {}) => {
      await kube.create(cnsRef(pool), {
        apiVersion: GROUP,
        kind: 'CellNodeSet',
        metadata: {
          name: pool,
          namespace,
          labels: { 'cells.kubeswift.io/pool': pool, 'cells.kubeswift.io/pool-uid': poolUID },
          ownerReferences: [
            { apiVersion: GROUP, kind: 'GPUCellPool', name: pool, uid: poolUID, controller: true, blockOwnerDeletion: true }
          ]
        },
        spec: { kubeconfigSecretRef: { name: secret, key: 'value' }, poolUID, nodes: [], ...spec }
      })
    }
  }
}

/** How many passes the agent has logged for the CellNodeSet `key` (`namespace/name`; debug level logs every pass). */
export function passesOf(agent: AgentProcess, key: string): number {
  return readFileSync(agent.log, 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"cellNodeSet":"${key}"`) && l.includes('"msg":"pass"')).length
}

/** Polls until `check` answers, with the agent's log in the failure message. */
export async function untilAgent<T>(
  agent: AgentProcess | undefined,
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000
): Promise<T> {
  try {
    return await eventually(what, check, timeoutMs)
  } catch (error) {
    throw new Error(`${(error as Error).message}\nagent log:\n${agent?.logTail() ?? '(no agent)'}`)
  }
}
