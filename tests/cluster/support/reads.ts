/**
 * Reading objects back in scenario files: resource references by kind, reads that treat
 * NotFound as an answer rather than an error, and an object's status condition.
 */
import { isReason, resourcePath, type KubeApi, type ResourceRef } from './kube.ts'
import type { JsonObject } from '../../support/merge.ts'

/** References of the kinds the scenarios read. */
export const refs = {
  instance: (namespace: string, name: string): ResourceRef => ({
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    resource: 'instances',
    namespace,
    name
  }),
  pod: (namespace: string, name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'pods', namespace, name }),
  service: (namespace: string, name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'services', namespace, name }),
  namespace: (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'namespaces', name }),
  policy: (namespace: string, name: string): ResourceRef => ({
    apiVersion: 'networking.k8s.io/v1',
    resource: 'networkpolicies',
    namespace,
    name
  })
}

/**
 * `get` answers undefined for NotFound; `must` throws naming the path. `T` lets a scenario read
 * objects as loose views when it checks every field it reads by value.
 */
export function reader<T = JsonObject>(
  kube: KubeApi
): { get: (ref: ResourceRef) => Promise<T | undefined>; must: (ref: ResourceRef) => Promise<T> } {
  const get = async (ref: ResourceRef): Promise<T | undefined> => {
    try {
      return (await kube.get(ref)).body as T
    } catch (err) {
      if (isReason(err, 'NotFound')) return undefined
      throw err
    }
  }
  const must = async (ref: ResourceRef): Promise<T> => {
    const found = await get(ref)
    if (found === undefined) throw new Error(`${resourcePath(ref)} not found`)
    return found
  }
  return { get, must }
}

/** The status condition `type` of an object read as a loose view (scenarios check each field by value), or undefined. */
export const condition = (o: any, type: string): any => (o?.status?.conditions ?? []).find((c: any) => c?.type === type)
