/**
 * The package as a platform team uses it (docs/library.md): `npm pack` (which builds dist/ first,
 * its prepack script), then a project of its own in a temporary directory that installs the
 * tarball and runs the worked example of docs/library.md with `node --test`, imports the exported
 * paths, is refused the others, and type-checks a TypeScript file against the declarations.
 *
 * Offline: the project's lockfile names the tarball and, for its dependencies, the versions and
 * integrities of the repository's own package-lock.json, so `npm ci --offline` takes every
 * package from the npm cache `npm ci` filled. Needs no cluster; runs as its own layer
 * (`npm run test:package`, after `npm test` in .ci/run) because it rewrites dist/.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..', '..')
const work = mkdtempSync(join(tmpdir(), 'gpuhooks-package-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const project = join(work, 'platform')
mkdirSync(project)

interface PackageJson {
  name: string
  version: string
  license: string
  dependencies: Record<string, string>
  bin: Record<string, string>
  engines: Record<string, string>
  exports: Record<string, string | { types: string; default: string }>
}
interface LockEntry {
  dev?: boolean
  devOptional?: boolean
  [field: string]: unknown
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }

/** A child process's exit code and output, whether it succeeded or not. */
async function outcome(file: string, args: readonly string[], cwd: string): Promise<{ code: number; out: string }> {
  // Outside this runner's environment: the example runs as a user's `node --test` would.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TAP|_TAPJS|NODE_OPTIONS)/.test(k)))
  return run(file, args, { cwd, env, maxBuffer: 32 << 20 }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` })
  )
}

// npm pack, as a user builds the tarball from a checkout.
const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, maxBuffer: 32 << 20 })
const [tarball] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{
  filename: string
  integrity: string
  files: Array<{ path: string }>
}>
if (tarball === undefined) throw new Error('npm pack reported no tarball')
const dependency = `file:../${tarball.filename}`

// The project: its manifest, and a lockfile of the tarball and the repository's production packages.
writeFileSync(
  join(project, 'package.json'),
  JSON.stringify({ name: 'platform', private: true, type: 'module', dependencies: { [pkg.name]: dependency } }, null, 2)
)
const production = Object.entries(lock.packages)
  .filter(([path, entry]) => path !== '' && entry.dev !== true && entry.devOptional !== true)
  .map(([path, entry]) => [path, entry] as const)
writeFileSync(
  join(project, 'package-lock.json'),
  JSON.stringify(
    {
      name: 'platform',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'platform', dependencies: { [pkg.name]: dependency } },
        [`node_modules/${pkg.name}`]: {
          version: pkg.version,
          resolved: dependency,
          integrity: tarball.integrity,
          license: pkg.license,
          dependencies: pkg.dependencies,
          bin: pkg.bin,
          engines: pkg.engines
        },
        ...Object.fromEntries(production)
      }
    },
    null,
    2
  )
)
const installed = await outcome('npm', ['ci', '--offline', '--no-audit', '--no-fund'], project)
if (installed.code !== 0) throw new Error(`npm ci --offline in the project failed:\n${installed.out}`)

/** The code blocks of docs/library.md written in `lang`. */
function docBlocks(lang: string): string[] {
  const text = readFileSync(join(ROOT, 'docs/library.md'), 'utf8')
  return [...text.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1] as string)
}

t.test('the tarball holds the compiled hooks with their declarations, no source and no test', async (t) => {
  const paths = tarball.files.map((f) => f.path)
  t.strictSame(
    paths.filter((p) => !p.startsWith('dist/hooks/') && p !== 'package.json' && p !== 'README.md'),
    [],
    'nothing outside dist/hooks but the manifest and the README'
  )
  t.strictSame(
    paths.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    [],
    'no TypeScript source'
  )
  for (const target of Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : [e.types, e.default]))) {
    if (target !== './package.json') t.ok(paths.includes(target.slice(2)), `${target} is packed`)
  }
})

t.test('the worked example of docs/library.md passes against the installed package', async (t) => {
  const [example] = docBlocks('js')
  if (example === undefined) throw new Error('docs/library.md has no js block')
  const file = /^\/\/ (\S+\.test\.mjs)$/m.exec(example)?.[1]
  t.equal(file, 'platform.test.mjs', 'the example names its file')
  writeFileSync(join(project, 'platform.test.mjs'), example)
  const tests = [...example.matchAll(/^test\(/gm)].length
  t.ok(tests >= 5, `the example has its ${tests} tests`)
  const result = await outcome(process.execPath, ['--test', 'platform.test.mjs'], project)
  t.equal(result.code, 0, result.code === 0 ? 'node --test passed' : result.out.slice(-4000))
  t.match(result.out, new RegExp(`^# pass ${tests}$`, 'm'))
  t.match(result.out, /^# fail 0$/m)
})

t.test('the exported paths load in plain Node; the files behind them are not importable', async (t) => {
  const script = `
    const { CONTROLLERS } = await import('gpuhooks')
    const subpaths = await Promise.all(['instance', 'isolation', 'cellpool'].map((name) => import('gpuhooks/' + name).then((m) => m[name])))
    let internal
    try { await import('gpuhooks/dist/hooks/instance/sync.js'); internal = 'loaded' } catch (err) { internal = err.code }
    console.log(JSON.stringify({
      names: CONTROLLERS.map((c) => c.name),
      same: subpaths.every((d, i) => d === CONTROLLERS[i]),
      hooks: subpaths.map((d) => [typeof d.customize.run, typeof d.sync.run, typeof d.finalize?.run, typeof d.admission?.review]),
      internal
    }))`
  const result = await outcome(process.execPath, ['--input-type=module', '-e', script], project)
  t.equal(result.code, 0, result.out.slice(-2000))
  t.strictSame(JSON.parse(result.out), {
    names: ['instance', 'isolation', 'cellpool'],
    same: true,
    hooks: [
      ['function', 'function', 'function', 'function'],
      ['function', 'function', 'undefined', 'undefined'],
      ['function', 'function', 'function', 'function']
    ],
    internal: 'ERR_PACKAGE_PATH_NOT_EXPORTED'
  })
})

t.test('the declarations type-check a strict TypeScript consumer, and catch a wrong call', async (t) => {
  writeFileSync(
    join(project, 'check.ts'),
    [
      "import { instance } from 'gpuhooks/instance'",
      "import { CONTROLLERS } from 'gpuhooks'",
      "const parent = { metadata: { name: 'train', namespace: 'team-a' }, spec: {} }",
      'const answer = instance.sync.run({ parent, children: {}, related: {}, finalizing: false }, new Date())',
      'export const kinds: string[] = answer.children.map((child) => child.kind)',
      'export const names: string[] = CONTROLLERS.map((c) => c.name)',
      '// @ts-expect-error the clock is a Date',
      "instance.sync.run({ parent, children: {}, related: {}, finalizing: false }, '2026-01-01')",
      ''
    ].join('\n')
  )
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: []
      },
      files: ['check.ts']
    })
  )
  const result = await outcome(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], project)
  t.equal(result.code, 0, result.out.slice(-4000))
})
