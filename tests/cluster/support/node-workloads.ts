/**
 * The objects the real-node scenarios create: an InstanceType a HAMi GPU node would serve, an
 * Instance running the HTTP server of node-probe.ts. The user's writes go through kubectl.ts.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { JsonObject } from '../../support/merge.ts'
import type { TestCluster } from './cluster.ts'
import { apply } from './kubectl.ts'
import { HTTP_SERVER } from './node-probe.ts'

/** The InstanceType of the scenarios: whole GPUs on the node's advertised HAMi resources. */
export const HAMI_TYPE: JsonObject = {
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'InstanceType',
  metadata: { name: 'hami' },
  spec: {
    devicePlugin: 'HAMi',
    resourceName: 'nvidia.com/gpu',
    families: ['Whole'],
    maxCount: 8,
    nodeSelector: { gpu: 'on' },
    defaults: { cpu: '100m', memory: '128Mi' }
  }
}

/** An Instance of {@link HAMI_TYPE} with one GPU, running the HTTP server on 8080 and 8081. */
export function webInstance(namespace: string, name: string, image: string, spec: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace },
    spec: {
      type: 'hami',
      image,
      imagePullPolicy: 'IfNotPresent',
      command: ['node', '-e', HTTP_SERVER],
      env: [{ name: 'PORTS', value: '8080,8081' }],
      resources: { accelerator: { count: 1 } },
      ports: [{ port: 8080 }],
      ...spec
    }
  }
}

/**
 * A workload that remembers across Pods in its workspace: on start it reads the marker a previous
 * Pod left in /workspace (or writes a new one), appends what it found to /workspace/log, then
 * idles. The log is read from the volume's directory on the host ({@link workspaceLog}), so what a
 * Pod saw is what it wrote itself.
 */
export const REMEMBER_WORKSPACE = [
  "const fs = require('fs')",
  "const marker = '/workspace/marker'",
  "const found = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : 'nothing'",
  "if (found === 'nothing') fs.writeFileSync(marker, require('crypto').randomUUID())",
  "fs.appendFileSync('/workspace/log', 'found ' + found + '\\n')",
  'setInterval(() => {}, 1 << 30)'
].join('; ')

/**
 * The lines {@link REMEMBER_WORKSPACE} appended to the log in the volume's host directory `dir`,
 * once there are at least `count`: a Pod is Running as soon as its container has started, before
 * the workload has run its first line, so the log is waited for (60 s at most), never read once.
 */
export async function workspaceLog(dir: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const file = join(dir, 'log')
    const lines = existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
      : []
    if (lines.length >= count || Date.now() > deadline) return lines
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/**
 * A hostPath PersistentVolume `name` of `storage` in the host directory `dir` (made, writable by
 * every user), of a StorageClass `storageClass` without a provisioner: kube-controller-manager's
 * binder binds a claim of that class to it. `expandable`: the class allows a claim to grow.
 */
export async function hostPathVolume(
  cluster: TestCluster,
  options: { name: string; dir: string; storageClass: string; storage: string; expandable?: boolean }
): Promise<void> {
  mkdirSync(options.dir, { recursive: true })
  chmodSync(options.dir, 0o777)
  await apply(cluster, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: options.storageClass },
    provisioner: 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'Immediate',
    ...(options.expandable === true ? { allowVolumeExpansion: true } : {})
  })
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: options.name },
    spec: {
      capacity: { storage: options.storage },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: options.storageClass,
      hostPath: { path: options.dir, type: 'Directory' }
    }
  })
}
