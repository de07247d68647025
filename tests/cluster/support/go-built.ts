/**
 * A program the cluster layer builds once per machine from its Go module (../build-*.sh, cached
 * under ~/.cache/gpuhooks): the one in the directory `$<variable>` names when it is there, else the
 * path the build script prints last (the script finds its cache fresh, waits on a build in
 * progress, or builds).
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export function goBuiltProgram(variable: string, program: string, script: string): string {
  const fromEnv = process.env[variable]
  if (fromEnv !== undefined && existsSync(join(fromEnv, program))) return join(fromEnv, program)
  const path = fileURLToPath(new URL(`../${script}`, import.meta.url))
  const result = spawnSync('bash', [path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const last = result.stdout.trim().split('\n').pop()?.trim()
  if (result.status !== 0 || last === undefined || last === '') throw new Error(`${path} failed (${String(result.status)})`)
  return last
}
