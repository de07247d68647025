/**
 * The `Reachable` condition's reason for a failed read of the workload cluster (docs/workload.md):
 * HTTP 401 is `CredentialInvalid` (the cluster does not accept the kubeconfig's identity), 403 is
 * `Forbidden` (the identity lacks the workload ClusterRole), anything else (refused connection,
 * timeout, TLS failure, 5xx) is `Unreachable`.
 */
import type { ReachableReason } from '../../api/cellnodeset.ts'
import { isRecord } from '../../k8s/objects.ts'

/** A reason and the error text for the condition's message. */
export interface Reachability {
  reason: ReachableReason
  message: string
}

/** Classifies an error thrown by a read of the workload cluster. */
export function classifyError(error: unknown): Reachability {
  const code = isRecord(error) && typeof error.code === 'number' ? error.code : undefined
  const message = errorText(error)
  if (code === 401)
    return { reason: 'CredentialInvalid', message: `HTTP 401: the workload cluster refused the kubeconfig's credential: ${message}` }
  if (code === 403)
    return {
      reason: 'Forbidden',
      message: `HTTP 403: the kubeconfig's identity lacks a permission of the workload ClusterRole: ${message}`
    }
  return { reason: 'Unreachable', message }
}

/** A short, single-line text of an error: the API's Status message when there is one. */
export function errorText(error: unknown): string {
  if (isRecord(error)) {
    const body = error.body
    if (typeof body === 'string') {
      try {
        const parsed: unknown = JSON.parse(body)
        if (isRecord(parsed) && typeof parsed.message === 'string') return parsed.message.slice(0, 500)
      } catch {
        // Not JSON: fall back to the error's own message.
      }
    }
    if (isRecord(body) && typeof body.message === 'string') return body.message.slice(0, 500)
  }
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0]?.slice(0, 500) ?? ''
}
