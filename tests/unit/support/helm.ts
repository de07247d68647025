/**
 * Helm for the chart tests: `$GPUHOOKS_HELM`, else the cached build (the script only checks it),
 * else in CI a build; elsewhere a missing Helm skips those tests rather than build it inside a
 * unit test's timeout.
 */
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { helmPath } from '../../../deploy/chart/generate.ts'

/** The Helm binary, or undefined when the chart tests are to be skipped. */
export function findHelm(): string | undefined {
  const cached = join(homedir(), '.cache', 'gpuhooks', 'helm-v3.22.0', 'helm')
  if (process.env['GPUHOOKS_HELM'] === undefined && !existsSync(cached) && process.env['CI'] === undefined) return undefined
  return helmPath()
}

/** Why the chart tests are skipped without Helm. */
export const NO_HELM = 'helm is not available: run bash tests/cluster/build-helm.sh (needs Go) or set GPUHOOKS_HELM'
