/**
 * Settings as an older release left them: the Setting CRD refuses a value its CEL rule rejects
 * (an unparseable pod CIDR list), so such a value can only be in the cluster from a CRD without
 * the rule (an earlier release, or a CRD edited by hand). Scenarios store one that way, then put
 * the real CRD back, as an upgrade would.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { isObject, type JsonObject } from '../../support/merge.ts'
import type { TestCluster } from './cluster.ts'
import { eventually } from './env.ts'
import { isReason, type KubeApi, type ResourceRef } from './kube.ts'

const CRD_PATH = join(import.meta.dirname, '..', '..', '..', 'crds', 'settings.gpustack.ai.yaml')

/** The Setting CRD's CEL rules, as crds/ has them (to check the real CRD has one). */
export function settingRules(): unknown {
  const crd = parse(readFileSync(CRD_PATH, 'utf8')) as JsonObject
  const version = ((crd.spec as JsonObject).versions as JsonObject[])[0] as JsonObject
  const schema = isObject(version.schema) ? (version.schema.openAPIV3Schema as JsonObject) : {}
  return schema['x-kubernetes-validations']
}

/**
 * Stores `value` in the existing Setting `ref` under a Setting CRD without its CEL rule, then
 * applies the real CRD again and waits until it refuses a bad value once more (`kubectl patch
 * --dry-run=server` of `name` failing with the rule's message).
 */
export async function storeUnchecked(cluster: TestCluster, kube: KubeApi, ref: ResourceRef, value: string): Promise<void> {
  const crd = parse(readFileSync(CRD_PATH, 'utf8')) as JsonObject
  const version = ((crd.spec as JsonObject).versions as JsonObject[])[0] as JsonObject
  delete ((version.schema as JsonObject).openAPIV3Schema as JsonObject)['x-kubernetes-validations']
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) })
  await eventually('the rule-less Setting CRD takes the value', async () => {
    try {
      await kube.patch(ref, { value }, 'merge')
      return true
    } catch (err) {
      if (isReason(err, 'Invalid')) return undefined
      throw err
    }
  })
  await cluster.kubectl(['apply', '-f', CRD_PATH])
  await eventually('the CEL rule refuses bad values again', async () => {
    const r = await cluster.kubectl(
      ['patch', 'setting', String(ref.name), '--type=merge', '-p', '{"value":"0.0.0.0/0"}', '--dry-run=server'],
      {
        allowFail: true
      }
    )
    return r.code !== 0 && r.stderr.includes('canonical CIDRs') ? true : undefined
  })
}
