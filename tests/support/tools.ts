/**
 * The Go-built tools the unit layer uses (Helm for the chart tests, promtool for the rule tests),
 * each built once per machine by its script under tests/cluster/ and cached under
 * ~/.cache/gpuhooks. A test file asks for a tool and, when it is neither named by its variable
 * nor cached, skips with the reason, except in CI, where the script builds it (a missing tool
 * there is a failure, not a skip).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { ROOT, helmPath } from '../../deploy/chart/generate.ts'

/** A tool found, or why not. */
export type Found = { path: string } | { skip: string }

const CLUSTER_SCRIPTS = join(ROOT, 'tests', 'cluster')

/** The value of `name="..."` in a build script: the version it pins. */
function pinned(script: string, name: string): string {
  const match = new RegExp(`^${name}="([^"]+)"`, 'm').exec(readFileSync(join(CLUSTER_SCRIPTS, script), 'utf8'))
  if (match?.[1] === undefined) throw new Error(`tests/cluster/${script} pins no ${name}`)
  return match[1]
}

/** The last line a build script prints: the path of what it built or found cached. */
function built(script: string): string {
  const out = execFileSync('bash', [join(CLUSTER_SCRIPTS, script)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const last = out.trim().split('\n').pop()
  if (last === undefined || last === '') throw new Error(`tests/cluster/${script} printed no path`)
  return last
}

function find(variable: string, cached: string, build: () => string, how: string): Found {
  const named = process.env[variable]
  if (named !== undefined && named !== '') return { path: named }
  if (!existsSync(cached) && process.env['CI'] === undefined) return { skip: `${how} or set ${variable}` }
  return { path: build() }
}

/** Helm: `$GPUHOOKS_HELM`, the cached build, or (in CI) a build. */
export function findHelm(): Found {
  const cached = join(homedir(), '.cache', 'gpuhooks', `helm-${pinned('build-helm.sh', 'version')}`, 'helm')
  return find('GPUHOOKS_HELM', cached, helmPath, 'helm is not available: run bash tests/cluster/build-helm.sh (needs Go)')
}

/** promtool: `$GPUHOOKS_PROMTOOL`, the cached build, or (in CI) a build. */
export function findPromtool(): Found {
  const cached = join(homedir(), '.cache', 'gpuhooks', `promtool-v${pinned('build-promtool.sh', 'version')}`, 'promtool')
  return find(
    'GPUHOOKS_PROMTOOL',
    cached,
    () => built('build-promtool.sh'),
    'promtool is not available: run bash tests/cluster/build-promtool.sh (needs Go)'
  )
}
