/**
 * Keeps the chart's generated parts in step with the repository (`npm run chart`), or with
 * `--check` only reports what is stale and exits 1:
 *
 * - `deploy/chart/gpuhooks/files/crds/` and `files/metacontroller/`: copies of `crds/*.yaml` and
 *   `metacontroller/*.yaml`, which the chart's templates render (a file added there, such as the
 *   cell pool's CRD and controller, enters the chart at the next run; one removed there leaves it);
 * - `files/controllers.yaml` and `metacontroller/clusterapi/cellpool.yaml`: the controllers'
 *   descriptors carried into the chart and into `metacontroller/` (controllers.ts);
 * - `deploy/gpuhooks.yaml`: the plain manifest, the chart rendered by `helm template` with default
 *   values (Settings not seeded), release `gpuhooks` in namespace `gpuhooks-system`, after the
 *   Namespace itself, as on a cluster that serves no KubeSwift: Instances and isolation;
 * - `deploy/gpuhooks-cellpool.yaml`: the same as on a cluster that serves what the cell pool
 *   controller needs (KubeSwift's SwiftSeedProfiles and SwiftGuests): GPU cell pools too. One or the
 *   other is applied, not both.
 *
 * Helm is `$GPUHOOKS_HELM`, else the one tests/cluster/build-helm.sh builds and caches.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { clusterApiManifest, clusterApiManifestPath, controllersFile } from './controllers.ts'

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The chart's directory. */
export const CHART = join(ROOT, 'deploy', 'chart', 'gpuhooks')
/** The plain manifest. */
export const PLAIN_MANIFEST = join(ROOT, 'deploy', 'gpuhooks.yaml')
/** The plain manifest with GPU cell pools. */
export const PLAIN_MANIFEST_CELLPOOL = join(ROOT, 'deploy', 'gpuhooks-cellpool.yaml')
/** The controllers as the chart reads them. */
export const CONTROLLERS_FILE = join(CHART, 'files', 'controllers.yaml')
/** Release name and namespace of the plain manifest. */
export const PLAIN_RELEASE = { name: 'gpuhooks', namespace: 'gpuhooks-system' }

/** The copied folders: repository source → chart destination. */
const COPIES = [
  { from: join(ROOT, 'crds'), to: join(CHART, 'files', 'crds') },
  { from: join(ROOT, 'metacontroller'), to: join(CHART, 'files', 'metacontroller') }
]

function yamlFiles(dir: string): string[] {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .sort()
    : []
}

/** The path of a Helm binary: `$GPUHOOKS_HELM`, else built (once per machine) and cached. */
export function helmPath(): string {
  const fromEnv = process.env['GPUHOOKS_HELM']
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  const out = execFileSync('bash', [join(ROOT, 'tests', 'cluster', 'build-helm.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const last = out.trim().split('\n').pop()
  if (last === undefined || last === '') throw new Error('tests/cluster/build-helm.sh printed no path')
  return last
}

/** Runs `helm template` of the chart; `args` adds flags such as `--set`. */
export function helmTemplate(helm: string, args: readonly string[] = [], release = PLAIN_RELEASE): string {
  return execFileSync(helm, ['template', release.name, CHART, '--namespace', release.namespace, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe']
  })
}

/**
 * The `--api-versions` flags under which `helm template` renders the chart as on a cluster that
 * serves what the cell pool controller needs (files/controllers.yaml).
 */
export function cellPoolCapabilities(): string[] {
  const file = parse(readFileSync(CONTROLLERS_FILE, 'utf8')) as { controllers: Array<{ name: string; needs: string[] }> }
  const needs = file.controllers.find((c) => c.name === 'cellpool')?.needs ?? []
  return needs.flatMap((kind) => ['--api-versions', kind])
}

/** A plain manifest's text, rendered from the chart as it is on disk; `cellpools` as on a cluster that serves KubeSwift. */
export function renderPlainManifest(helm: string, cellpools = false): string {
  const header = [
    `# gpuhooks, for \`kubectl apply -f\`: the Helm chart deploy/chart/gpuhooks rendered with default values`,
    '# (release gpuhooks, namespace gpuhooks-system, Settings not seeded) by `npm run chart`. Do not edit.',
    cellpools
      ? '# As on a cluster that serves KubeSwift: Instances, isolation and GPU cell pools (apply this or gpuhooks.yaml).'
      : '# As on a cluster without KubeSwift: Instances and isolation; with GPU cell pools: gpuhooks-cellpool.yaml.',
    '# It holds no certificate or key: the Job gpuhooks-certs-1 makes them in the cluster.',
    '---',
    'apiVersion: v1',
    'kind: Namespace',
    'metadata:',
    `  name: ${PLAIN_RELEASE.namespace}`,
    '  labels:',
    '    app.kubernetes.io/part-of: gpuhooks',
    ''
  ].join('\n')
  return header + helmTemplate(helm, ['--set', 'worker.seedSettings=false', ...(cellpools ? cellPoolCapabilities() : [])])
}

/** A file whose content differs from what it should be (`expected` undefined: must not exist). */
export interface Stale {
  path: string
  expected: string | undefined
}

/** A generated file against what it holds. */
function staleFile(path: string, expected: string): Stale[] {
  return existsSync(path) && readFileSync(path, 'utf8') === expected ? [] : [{ path, expected }]
}

/** What the copies and the files derived from the descriptors should hold against what they hold. */
export function staleCopies(): Stale[] {
  const stale: Stale[] = [
    ...staleFile(CONTROLLERS_FILE, controllersFile(ROOT)),
    ...staleFile(clusterApiManifestPath(ROOT), clusterApiManifest(ROOT))
  ]
  for (const { from, to } of COPIES) {
    const wanted = yamlFiles(from)
    for (const name of wanted) {
      const expected = readFileSync(join(from, name), 'utf8')
      const path = join(to, name)
      if (!existsSync(path) || readFileSync(path, 'utf8') !== expected) stale.push({ path, expected })
    }
    for (const name of yamlFiles(to)) {
      if (!wanted.includes(name)) stale.push({ path: join(to, name), expected: undefined })
    }
  }
  return stale
}

/** Whether the plain manifests match the chart (rendered with `helm`). */
export function stalePlainManifest(helm: string): Stale[] {
  return [...staleFile(PLAIN_MANIFEST, renderPlainManifest(helm)), ...staleFile(PLAIN_MANIFEST_CELLPOOL, renderPlainManifest(helm, true))]
}

function write(stale: readonly Stale[]): void {
  for (const { path, expected } of stale) {
    if (expected === undefined) rmSync(path)
    else {
      mkdirSync(join(path, '..'), { recursive: true })
      writeFileSync(path, expected)
    }
    console.log(`${expected === undefined ? 'removed' : 'wrote'} ${relative(ROOT, path)}`)
  }
}

function main(args: readonly string[]): number {
  const check = args.includes('--check')
  const copies = staleCopies()
  if (!check) write(copies)
  const helm = helmPath()
  const plain = check && copies.length > 0 ? [] : stalePlainManifest(helm)
  const stale = [...copies, ...plain]
  if (check) {
    for (const { path } of stale) console.error(`${relative(ROOT, path)} is stale: run npm run chart`)
    return stale.length === 0 ? 0 : 1
  }
  write(plain)
  return 0
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = main(process.argv.slice(2))
}
