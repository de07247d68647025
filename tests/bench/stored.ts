/**
 * Objects as the API server stores them and Metacontroller sends them: system metadata, owner
 * references, the last-applied record and one managedFields entry per writer with its FieldsV1
 * set. For a benchmark the size and shape of a request matter, not its history, so every value is
 * fixed: each run sends the same bytes.
 */
import type { ManagedFieldsEntry } from 'kubernetes-types/meta/v1.d.ts'
import { isRecord, type KubeObject } from '../../hooks/k8s/objects.ts'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/metacontroller/observed.ts'

/** When every benchmark object was created, and when its Pod started. */
export const CREATED = '2026-01-05T09:00:00Z'
export const STARTED = '2026-01-05T09:00:41Z'

/** A uid unique to `seed`, the same on every run. */
export function uid(seed: number): string {
  return `6f1c1c3e-0000-4000-8000-${seed.toString(16).padStart(12, '0')}`
}

/** Fields that key an item of an associative list in FieldsV1, in the order they are tried. */
const LIST_KEYS = ['uid', 'name', 'type', 'containerPort', 'port', 'key', 'ip'] as const

/** The FieldsV1 set naming every field of `value`, as server-side field tracking records a writer. */
export function fieldsV1(value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (Array.isArray(value)) {
    value.forEach((item: unknown, i) => {
      if (!isRecord(item)) {
        out[`v:${JSON.stringify(item)}`] = {}
        return
      }
      const key = LIST_KEYS.find((k) => item[k] !== undefined)
      out[key === undefined ? `i:${i}` : `k:${JSON.stringify({ [key]: item[key] })}`] = { '.': {}, ...fieldsV1(item) }
    })
  } else if (isRecord(value)) {
    for (const [k, v] of Object.entries(value)) out[`f:${k}`] = isRecord(v) || Array.isArray(v) ? fieldsV1(v) : {}
  }
  return out
}

/** One writer of an object: who wrote which fields, through which subresource. */
export interface Writer {
  manager: string
  fields: unknown
  subresource?: 'status'
  time?: string
}

/** `metadata.managedFields` for the given writers. */
export function managedFields(apiVersion: string, writers: readonly Writer[]): ManagedFieldsEntry[] {
  return writers.map((w) => ({
    apiVersion,
    fieldsType: 'FieldsV1',
    fieldsV1: fieldsV1(w.fields),
    manager: w.manager,
    operation: 'Update',
    ...(w.subresource !== undefined ? { subresource: w.subresource } : {}),
    time: w.time ?? CREATED
  }))
}

/** The owner of a child, as its owner reference names it. */
export interface Owner {
  apiVersion: string
  kind: string
  name: string
  uid: string
}

/** What a controller adds to an object it applies: its selector label, its ownership annotation. */
export interface Marks {
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

/**
 * `desired` as stored after Metacontroller applied it for `owner`: the controller's `marks`, the
 * owner reference, the last-applied record, server metadata, and the server's view of `spec`
 * (`options.spec`, the desired spec when absent) and `status` (written by `statusManager`).
 */
export function storedChild(
  desired: KubeObject,
  owner: Owner,
  options: { seed: number; marks: Marks; spec?: unknown; status?: Record<string, unknown>; statusManager?: string }
): KubeObject {
  const applied = structuredClone(desired)
  const { labels, annotations } = options.marks
  applied.metadata = {
    ...applied.metadata,
    ...(labels !== undefined ? { labels: { ...applied.metadata.labels, ...labels } } : {}),
    ...(annotations !== undefined ? { annotations: { ...applied.metadata.annotations, ...annotations } } : {})
  }
  const ownerReferences = [{ ...owner, controller: true, blockOwnerDeletion: true }]
  const written = {
    metadata: { annotations: applied.metadata.annotations ?? {}, labels: applied.metadata.labels, ownerReferences },
    spec: applied.spec
  }
  const writers: Writer[] = [{ manager: 'metacontroller', fields: written }]
  if (options.status !== undefined) {
    writers.push({
      manager: options.statusManager ?? 'kube-controller-manager',
      fields: { status: options.status },
      subresource: 'status',
      time: STARTED
    })
  }
  return {
    ...applied,
    metadata: {
      ...applied.metadata,
      annotations: { ...applied.metadata.annotations, [LAST_APPLIED_ANNOTATION]: JSON.stringify(applied) },
      creationTimestamp: CREATED,
      managedFields: managedFields(String(desired.apiVersion), writers),
      ownerReferences,
      resourceVersion: String(100000 + options.seed),
      uid: uid(options.seed)
    },
    spec: options.spec ?? applied.spec,
    ...(options.status !== undefined ? { status: options.status } : {})
  }
}

/** A cluster object created by a person with `kubectl apply`: server metadata and kubectl's record. */
export function applied(object: KubeObject, seed: number, extraWriters: readonly Writer[] = []): KubeObject {
  const { status: _status, ...declared } = object
  const { apiVersion: _apiVersion, kind: _kind, metadata: _metadata, ...body } = declared
  const annotations = { ...object.metadata.annotations, 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(declared) }
  const byKubectl = { metadata: { annotations, labels: object.metadata.labels ?? {} }, ...body }
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations,
      creationTimestamp: CREATED,
      generation: object.metadata.generation ?? 1,
      managedFields: managedFields(String(object.apiVersion), [
        { manager: 'kubectl-client-side-apply', fields: byKubectl },
        ...extraWriters
      ]),
      resourceVersion: String(200000 + seed),
      uid: object.metadata.uid ?? uid(seed)
    }
  }
}
