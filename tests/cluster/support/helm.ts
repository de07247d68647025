/**
 * Helm against a test cluster: the binary `npm run chart` and the chart tests use
 * (deploy/chart/generate.ts), with the cluster's kubeconfig. A failure names the command and
 * carries Helm's own message.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { helmPath } from '../../../deploy/chart/generate.ts'

const run = promisify(execFile)

/** A function that runs `helm <args> --kubeconfig <kubeconfig>` and returns its stdout. */
export function helmRunner(kubeconfig: string): (args: string[]) => Promise<string> {
  const helm = helmPath()
  return async (args) => {
    try {
      return (await run(helm, [...args, '--kubeconfig', kubeconfig], { maxBuffer: 64 << 20 })).stdout
    } catch (err) {
      throw new Error(`helm ${args.join(' ')} failed: ${(err as { stderr?: string }).stderr ?? String(err)}`)
    }
  }
}
