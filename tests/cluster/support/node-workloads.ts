/**
 * The objects the real-node scenarios create: an InstanceType a HAMi GPU node would serve, an
 * Instance running the HTTP server of node-probe.ts. The user's writes go through kubectl.ts.
 */
import type { JsonObject } from '../../support/merge.ts'
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
