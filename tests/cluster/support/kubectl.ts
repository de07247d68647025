/**
 * A user's writes and reads through kubectl, the one home of them for every scenario file: kubectl,
 * so that the API server runs the admission webhooks and strict field validation on each write,
 * as it does for a user.
 */
import type { JsonObject } from '../../support/merge.ts'
import type { CommandResult, TestCluster } from './cluster.ts'

/** What {@link apply} may add: more kubectl arguments, and whether a refusal is an answer rather than a failure. */
export interface ApplyOptions {
  /** Arguments before `-f -`, such as `--validate=strict` or `--dry-run=server`. */
  args?: readonly string[]
  /** A non-zero exit is returned (with kubectl's stderr), not thrown. */
  allowFail?: boolean
}

/** `kubectl apply` of one object; a refusal throws, naming kubectl's message, unless `allowFail`. */
export async function apply(cluster: TestCluster, object: JsonObject, options: ApplyOptions = {}): Promise<CommandResult> {
  return cluster.kubectl(['apply', ...(options.args ?? []), '-f', '-'], {
    input: JSON.stringify(object),
    ...(options.allowFail === true ? { allowFail: true } : {})
  })
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
