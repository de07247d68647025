/**
 * What the API server does to a Pod on create and update, for the unit layer's stand-in
 * (server-defaults.ts).
 *
 * Read from Kubernetes v1.37.2: `pkg/apis/core/v1/defaults.go` and its generated defaulters for
 * Pods, the Pod strategy, and the admission plugins enabled by default (ServiceAccount, Priority,
 * DefaultTolerationSeconds).
 */
import { clone, deepEqual, isObject, type JsonObject } from './merge.ts'
import { ServerError, type FakeServer } from './fake-server.ts'
import { list, obj, setDefault } from './fields.ts'

/**
 * Fills in `pod` as the server stores it: defaults, on create the admission plugins' additions,
 * on update what the old Pod held. Throws {@link ServerError} for an update a Pod may not take.
 */
export function defaultPod(pod: JsonObject, old: JsonObject | undefined, server: FakeServer): void {
  const spec = obj(pod, 'spec')
  setDefault(spec, 'serviceAccountName', spec.serviceAccount ?? '')
  if (spec.serviceAccountName === '') delete spec.serviceAccountName
  setDefault(spec, 'dnsPolicy', 'ClusterFirst')
  setDefault(spec, 'restartPolicy', 'Always')
  if (!isObject(spec.securityContext)) spec.securityContext = {}
  setDefault(spec, 'terminationGracePeriodSeconds', 30)
  setDefault(spec, 'schedulerName', 'default-scheduler')
  if (typeof spec.enableServiceLinks !== 'boolean') spec.enableServiceLinks = true
  for (const c of [...list(spec, 'containers'), ...list(spec, 'initContainers')]) defaultContainer(c, spec.hostNetwork === true)
  for (const v of list(spec, 'volumes')) defaultVolume(v)
  if (old === undefined) {
    admitServiceAccount(spec, server)
    if (spec.priorityClassName === undefined || spec.priorityClassName === '') {
      setDefault(spec, 'priority', 0)
      setDefault(spec, 'preemptionPolicy', 'PreemptLowerPriority')
    }
  } else {
    const oldSpec = old.spec as JsonObject
    for (const f of ['priority', 'preemptionPolicy']) if (spec[f] === undefined && oldSpec[f] !== undefined) spec[f] = clone(oldSpec[f])
  }
  if (typeof spec.serviceAccountName === 'string') spec.serviceAccount = spec.serviceAccountName
  admitDefaultTolerationSeconds(spec)
  if (old !== undefined) checkPodUpdate(old.spec as JsonObject, spec)
}

function defaultContainer(c: JsonObject, hostNetwork: boolean): void {
  const image = String(c.image ?? '')
  const lastPart = image.split('@')[0]?.split('/').pop() ?? ''
  const tag = lastPart.includes(':') ? lastPart.split(':').pop() : image.includes('@') ? '' : 'latest'
  setDefault(c, 'imagePullPolicy', tag === 'latest' ? 'Always' : 'IfNotPresent')
  setDefault(c, 'terminationMessagePath', '/dev/termination-log')
  setDefault(c, 'terminationMessagePolicy', 'File')
  const resources = obj(c, 'resources')
  if (isObject(resources.limits)) {
    const requests = obj(resources, 'requests')
    for (const [k, v] of Object.entries(resources.limits)) if (requests[k] === undefined) requests[k] = v
  }
  for (const port of list(c, 'ports')) {
    setDefault(port, 'protocol', 'TCP')
    if (hostNetwork) setDefault(port, 'hostPort', port.containerPort ?? 0)
  }
  for (const env of list(c, 'env')) {
    if (isObject(env.valueFrom) && isObject(env.valueFrom.fieldRef)) setDefault(env.valueFrom.fieldRef, 'apiVersion', 'v1')
  }
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const probe = c[key]
    if (!isObject(probe)) continue
    for (const [f, v] of [
      ['timeoutSeconds', 1],
      ['periodSeconds', 10],
      ['successThreshold', 1],
      ['failureThreshold', 3]
    ] as const) {
      if (probe[f] === undefined || probe[f] === 0) probe[f] = v
    }
    if (isObject(probe.httpGet)) {
      setDefault(probe.httpGet, 'path', '/')
      setDefault(probe.httpGet, 'scheme', 'HTTP')
    }
  }
}

function defaultVolume(v: JsonObject): void {
  const sources = Object.keys(v).filter((k) => k !== 'name')
  if (sources.length === 0) v.emptyDir = {}
  if (isObject(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = ''
  for (const k of ['secret', 'configMap', 'downwardAPI', 'projected']) if (isObject(v[k])) setDefault(v[k], 'defaultMode', 420)
  if (isObject(v.projected)) {
    for (const source of list(v.projected, 'sources')) {
      if (isObject(source.serviceAccountToken)) setDefault(source.serviceAccountToken, 'expirationSeconds', 3600)
    }
  }
}

// ServiceAccount admission, on create: the `default` account and its token volume in every container.
function admitServiceAccount(spec: JsonObject, server: FakeServer): void {
  setDefault(spec, 'serviceAccountName', 'default')
  if (spec.automountServiceAccountToken === false) return
  const mountPath = '/var/run/secrets/kubernetes.io/serviceaccount'
  const existing = list(spec, 'volumes').find((v) => String(v.name).startsWith('kube-api-access-'))
  const name = existing === undefined ? `kube-api-access-${server.nameSuffix()}` : String(existing.name)
  let needed = false
  for (const c of [...list(spec, 'initContainers'), ...list(spec, 'containers')]) {
    const mounts = list(c, 'volumeMounts')
    if (mounts.some((m) => m.mountPath === mountPath)) continue
    c.volumeMounts = [...mounts, { name, readOnly: true, mountPath }]
    needed = true
  }
  if (existing !== undefined || !needed) return
  spec.volumes = [
    ...list(spec, 'volumes'),
    {
      name,
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } }
        ]
      }
    }
  ]
}

// DefaultTolerationSeconds admission, on create and update: appended unless a toleration covers it.
function admitDefaultTolerationSeconds(spec: JsonObject): void {
  const tolerations = list(spec, 'tolerations')
  const covers = (key: string): boolean =>
    tolerations.some(
      (t) =>
        (t.key === key || t.key === undefined || t.key === '') && (t.effect === 'NoExecute' || t.effect === undefined || t.effect === '')
    )
  const added = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']
    .filter((key) => !covers(key))
    .map((key) => ({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }))
  if (added.length > 0) spec.tolerations = [...tolerations, ...added]
}

// Pod updates may change images, activeDeadlineSeconds, terminationGracePeriodSeconds and add tolerations.
function checkPodUpdate(oldSpec: JsonObject, spec: JsonObject): void {
  const strip = (s: JsonObject): JsonObject => {
    const c = clone(s)
    for (const k of ['containers', 'initContainers']) for (const container of list(c, k)) delete container.image
    delete c.activeDeadlineSeconds
    delete c.terminationGracePeriodSeconds
    delete c.tolerations
    return c
  }
  const kept = list(oldSpec, 'tolerations').every((t) =>
    list(spec, 'tolerations').some((n) => deepEqual({ ...n, tolerationSeconds: null }, { ...t, tolerationSeconds: null }))
  )
  if (!kept || !deepEqual(strip(oldSpec), strip(spec))) {
    throw new ServerError(
      'Invalid',
      'spec: Forbidden: pod updates may not change fields other than images, activeDeadlineSeconds, terminationGracePeriodSeconds or additions to tolerations'
    )
  }
}

/** `status.qosClass` of a new Pod with this spec. */
export function qosClass(spec: JsonObject): string {
  const containers = [...list(spec, 'containers'), ...list(spec, 'initContainers')]
  const res = (c: JsonObject, k: string): JsonObject => (isObject(c.resources) && isObject(c.resources[k]) ? c.resources[k] : {})
  const compute = (m: JsonObject): string[] => Object.keys(m).filter((k) => k === 'cpu' || k === 'memory')
  if (containers.every((c) => compute(res(c, 'requests')).length === 0 && compute(res(c, 'limits')).length === 0)) return 'BestEffort'
  const guaranteed = containers.every((c) => {
    const limits = res(c, 'limits')
    const requests = res(c, 'requests')
    return ['cpu', 'memory'].every((k) => limits[k] !== undefined && (requests[k] === undefined || requests[k] === limits[k]))
  })
  return guaranteed ? 'Guaranteed' : 'Burstable'
}
