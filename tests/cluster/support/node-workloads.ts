/**
 * The objects the real-node scenarios create: an InstanceType a HAMi GPU node would serve, an
 * Instance running the HTTP server of node-probe.ts, and the user's writes through kubectl (so
 * the API server runs our admission webhook on them).
 */
import type { JsonObject } from '../../support/merge.ts'
import type { TestCluster } from './cluster.ts'
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

/** `kubectl apply` of one object. */
export async function apply(cluster: TestCluster, object: JsonObject): Promise<void> {
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) })
}

/** Creates namespaces and waits for their default ServiceAccounts (Pods need them). */
export async function createNamespaces(cluster: TestCluster, names: readonly string[]): Promise<void> {
  for (const ns of names) await cluster.kubectl(['create', 'namespace', ns])
  for (const ns of names) await cluster.kubectl(['wait', '--for=create', '-n', ns, 'serviceaccount/default', '--timeout=60s'])
}

/** `kubectl get ... -o json`, parsed. */
export async function getJson(cluster: TestCluster, args: string[]): Promise<any> {
  return JSON.parse((await cluster.kubectl(['get', ...args, '-o', 'json'])).stdout)
}
