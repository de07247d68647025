/**
 * What the Instance benchmarks on the cluster layer share (cluster.ts, metacontroller.ts): the hook
 * service's process seen from /proc, the InstanceType and Setting their Instances need, the
 * Instance they create, and a controller's Pod or Service as a user would apply it (the baseline).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { isObject, type JsonObject } from '../support/merge.ts'
import type { KubeApi } from '../cluster/support/kube.ts'

/** The parent pid of a process, from /proc/<pid>/stat (after the command name in parentheses). */
function parentPid(pid: string): number {
  return Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ')[1]
  )
}

/** The hook service's own node process: it has hooks/main.ts on its command line and PORT=<port>. */
export function servicePid(port: string): number {
  const matches = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (!cmdline.includes('hooks/main.ts')) continue
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`PORT=${port}`)) continue
      matches.set(Number(entry), parentPid(entry))
    } catch {
      // A process that ended while being read.
    }
  }
  // tsx starts the service as a child of its own CLI process: the one whose parent also matches.
  const leaves = [...matches].filter(([, ppid]) => matches.has(ppid)).map(([pid]) => pid)
  const found = leaves.length === 1 ? leaves[0] : matches.size === 1 ? [...matches.keys()][0] : undefined
  if (found === undefined) throw new Error(`cannot tell the hook service process among ${JSON.stringify([...matches])}`)
  return found
}

/** The InstanceType `bench` and the isolation Setting the benchmarks' Instances need. */
export async function createBenchType(kube: KubeApi): Promise<void> {
  await kube.create(
    { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instancetypes' },
    {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'InstanceType',
      metadata: { name: 'bench' },
      spec: { devicePlugin: 'HAMi', resourceName: 'nvidia.com/gpu', defaults: { cpu: '2', memory: '4Gi' } }
    }
  )
  await kube.create(
    { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings' },
    {
      apiVersion: 'gpustack.ai/v1alpha1',
      kind: 'Setting',
      metadata: { name: 'instance-isolation-pod-cidrs' },
      value: '10.244.0.0/16'
    }
  )
}

/** Instance `ws-<i>` of type `bench`: one port, no SSH. */
export function benchInstance(namespace: string, i: number): JsonObject {
  return {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name: `ws-${i}`, namespace },
    spec: { type: 'bench', image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'], ports: [{ port: 8888 }] }
  }
}

/**
 * What a client would apply, into `namespace`: the object without server-set and controller-set
 * fields (the controller-uid label, Metacontroller's annotations, a Service's cluster IPs and
 * node ports).
 */
export function asApplied(o: JsonObject, kind: 'Pod' | 'Service', namespace: string): JsonObject {
  const m = isObject(o.metadata) ? o.metadata : {}
  const metadata: JsonObject = { name: m.name ?? null, namespace }
  if (isObject(m.labels)) metadata.labels = Object.fromEntries(Object.entries(m.labels).filter(([k]) => k !== 'controller-uid'))
  if (isObject(m.annotations))
    metadata.annotations = Object.fromEntries(Object.entries(m.annotations).filter(([k]) => !k.startsWith('metacontroller.k8s.io/')))
  const spec = isObject(o.spec) ? structuredClone(o.spec) : {}
  if (kind === 'Service') {
    delete spec.clusterIP
    delete spec.clusterIPs
    if (Array.isArray(spec.ports)) for (const p of spec.ports) if (isObject(p)) delete p.nodePort
  }
  return { apiVersion: 'v1', kind, metadata, spec }
}
