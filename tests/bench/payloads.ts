/**
 * The benchmark's requests, as Metacontroller and the API server send them in the steady state a
 * resync mostly sees: the children exist and the hook answers them unchanged. Each payload carries
 * a check of the answer, so a benchmark never measures an early refusal.
 */
import type { AdmissionReview } from '../../hooks/admission/review.ts'
import { INSTANCE_TYPE_KEY, WORKER_API_VERSION } from '../../hooks/api/instance.ts'
import { ISOLATION_POD_CIDRS_SETTING, SETTING_TYPE_KEY } from '../../hooks/api/setting.ts'
import { buildPolicy, POLICY_NAME } from '../../hooks/isolation/policy.ts'
import { ISOLATION_ANNOTATION, NETWORK_POLICY_TYPE_KEY, type IsolationSyncRequest } from '../../hooks/isolation/sync.ts'
import { isRecord, type KubeObject } from '../../hooks/k8s/objects.ts'
import { DECORATOR_ANNOTATION, objectKey } from '../../hooks/metacontroller/observed.ts'
import { controllerObject, namespaceObject, runningInstanceRequest, setting } from './instance.ts'
import { checkLargestPool, largestPoolRequest } from './largest-pool.ts'
import { CREATED, storedChild, uid, type Owner } from './stored.ts'

/** One request to benchmark, and how to tell that the hook answered it properly. */
export interface Payload {
  name: string
  path: string
  body: string
  /** What is wrong with the hook's answer, or undefined when it is the expected one. */
  check: (answer: unknown) => string | undefined
}

const ISOLATION_CONTROLLER = 'gpuhooks-instance-isolation'
const POD_CIDRS = '10.244.0.0/16,fd00:10:244::/56'

/** A stopped Instance in brief: what a namespace with thousands of them relates. */
function stoppedInstance(name: string, namespace: string, seed: number): KubeObject {
  return {
    apiVersion: WORKER_API_VERSION,
    kind: 'Instance',
    metadata: { name, namespace, uid: uid(seed), resourceVersion: String(300000 + seed), generation: 2, creationTimestamp: CREATED },
    spec: { type: 'a100', image: 'nvcr.io/nvidia/pytorch:24.05-py3', ports: [{ port: 8888, name: 'jupyter' }], stop: true },
    status: { phase: 'Stopped', message: 'The Instance is stopped; its Service keeps the node ports.', observedGeneration: 2 }
  }
}

/**
 * The isolation sync request of `namespace` holding `instances`: the Namespace, its policy as
 * the decorator left it, the pod CIDR Setting, and the Instances.
 */
export function isolationRequest(namespace: string, instances: readonly KubeObject[]): IsolationSyncRequest {
  const object = namespaceObject(namespace, 905)
  const owner: Owner = { apiVersion: 'v1', kind: 'Namespace', name: namespace, uid: String(object.metadata.uid) }
  const [ipv4, ipv6] = POD_CIDRS.split(',')
  const policy = storedChild(buildPolicy(namespace, { ipv4: [String(ipv4)], ipv6: [String(ipv6)] }), owner, {
    seed: 906,
    marks: { annotations: { [DECORATOR_ANNOTATION]: ISOLATION_CONTROLLER } }
  })
  const map = Object.fromEntries(instances.map((i) => [objectKey(String(i.metadata.name), i.metadata.namespace), i]))
  return {
    controller: controllerObject('isolation.yaml', 'DecoratorController'),
    object: object as IsolationSyncRequest['object'],
    attachments: { [NETWORK_POLICY_TYPE_KEY]: { [objectKey(POLICY_NAME, namespace)]: policy } },
    related: {
      [SETTING_TYPE_KEY]: { [ISOLATION_POD_CIDRS_SETTING]: setting(ISOLATION_POD_CIDRS_SETTING, POD_CIDRS, 907) },
      [INSTANCE_TYPE_KEY]: map
    },
    finalizing: false
  }
}

/** A validating admission review of `kubectl apply` stopping a running Instance. */
export function stopReview(): AdmissionReview {
  const old = runningInstanceRequest().parent
  const next = { ...structuredClone(old), spec: { ...old.spec, stop: true } }
  const kind = { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' }
  const resource = { group: 'worker.gpustack.ai', version: 'v1alpha1', resource: 'instances' }
  // Declared apart: the schema types only the fields the webhook reads, the API server sends all.
  const request = {
    uid: uid(908),
    kind,
    resource,
    requestKind: kind,
    requestResource: resource,
    name: old.metadata.name,
    namespace: old.metadata.namespace,
    operation: 'UPDATE' as const,
    userInfo: { username: 'alice@example.com', uid: uid(909), groups: ['team-a:developers', 'system:authenticated'] },
    object: next,
    oldObject: old,
    dryRun: false,
    options: { apiVersion: 'meta.k8s.io/v1', kind: 'UpdateOptions', fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict' }
  }
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }
}

const field = (value: unknown, ...path: string[]): unknown => path.reduce((v, k) => (isRecord(v) ? v[k] : undefined), value)
const count = (value: unknown): number => (Array.isArray(value) ? value.length : -1)

/** A running Instance keeps its Pod and Service and stays Running. */
function checkRunning(answer: unknown): string | undefined {
  const phase = field(answer, 'status', 'phase')
  const children = count(field(answer, 'children'))
  return phase === 'Running' && children === 2 ? undefined : `expected phase Running with 2 children, got ${String(phase)} with ${children}`
}

/** The namespace keeps its one policy, without drift. */
function checkIsolated(answer: unknown): string | undefined {
  const attachments = count(field(answer, 'attachments'))
  const annotation = field(answer, 'annotations', ISOLATION_ANNOTATION)
  return attachments === 1 && annotation === null
    ? undefined
    : `expected 1 policy and no annotation, got ${attachments} and ${JSON.stringify(annotation)}`
}

function checkAllowed(answer: unknown): string | undefined {
  const allowed = field(answer, 'response', 'allowed')
  return allowed === true ? undefined : `expected allowed, got ${JSON.stringify(field(answer, 'response'))}`
}

/** Instances in the large isolation request: about 2 MiB of request. */
export const LARGE_INSTANCE_COUNT = 4000

/** The four payloads of `npm run bench`. */
export function payloads(): Payload[] {
  const fifty = Array.from({ length: 50 }, (_, i) => runningInstanceRequest(`ws-${i}`, 'tenant-a', 1000 + i).parent as KubeObject)
  const many = Array.from({ length: LARGE_INSTANCE_COUNT }, (_, i) => stoppedInstance(`nb-${i}`, 'tenant-big', 5000 + i))
  return [
    {
      name: 'instance sync: running, SSH, 4 ports',
      path: '/hooks/instance/sync',
      body: JSON.stringify(runningInstanceRequest()),
      check: checkRunning
    },
    {
      name: 'isolation sync: 50 Instances',
      path: '/hooks/isolation/sync',
      body: JSON.stringify(isolationRequest('tenant-a', fifty)),
      check: checkIsolated
    },
    { name: 'instance admission: UPDATE stop', path: '/admission/instance', body: JSON.stringify(stopReview()), check: checkAllowed },
    {
      name: `isolation sync: ${LARGE_INSTANCE_COUNT} Instances`,
      path: '/hooks/isolation/sync',
      body: JSON.stringify(isolationRequest('tenant-big', many)),
      check: checkIsolated
    }
  ]
}

/**
 * The largest GPUCellPool sync request the bounds allow (largest-pool.ts), built at the time of
 * the call: its workload cluster counts as observed for 2 minutes.
 */
export function largestPoolPayload(): Payload {
  const { request, cells, replicas } = largestPoolRequest(new Date())
  return {
    name: `cellpool sync: largest legal pool (${cells + 2} of ${replicas} cells, 64 KiB bootstrap and guestTemplate)`,
    path: '/hooks/cellpool/sync',
    body: JSON.stringify(request),
    check: checkLargestPool(cells)
  }
}
