/**
 * What deploy/Dockerfile builds, without a container engine: its stages done by hand in a
 * temporary directory (the build compiled with tsconfig.build.json, `npm ci --omit=dev` beside
 * it), then the compiled service run with `node dist/hooks/main.js` as the image runs it. The
 * process-contract tests of tests/http/process.test.ts run against it; the certificate entry
 * point and the render CLI load on production dependencies alone. Start time and memory are
 * printed as comments (measured, not asserted).
 */
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePorts } from '../support/ports.ts'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..', '..')
const app = mkdtempSync(join(tmpdir(), 'gpuhooks-image-'))
t.teardown(() => rmSync(app, { recursive: true, force: true }))

// The build stage: hooks/ compiled as `npm run build` does, into the image's directory.
await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(app, 'dist')], {
  cwd: ROOT
})
// The deps stage.
for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(app, file))
await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline'], { cwd: app, maxBuffer: 16 << 20 })

t.test('the image holds the compiled entry points and production dependencies only', async (t) => {
  for (const entry of ['hooks/main.js', 'hooks/certs/main.js', 'hooks/cli/render.js']) t.ok(existsSync(join(app, 'dist', entry)), entry)
  if (existsSync(join(ROOT, 'hooks', 'agent', 'main.ts')))
    t.ok(existsSync(join(app, 'dist', 'hooks', 'agent', 'main.js')), 'hooks/agent/main.js')
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
    devDependencies: Record<string, string>
  }
  for (const name of Object.keys(pkg.dependencies)) t.ok(existsSync(join(app, 'node_modules', name)), `${name} installed`)
  for (const name of ['tsx', 'typescript', 'tap', 'eslint']) t.notOk(existsSync(join(app, 'node_modules', name)), `${name} not installed`)
})

t.test('the built service passes the process-contract tests', async (t) => {
  // The test file run on its own (a TAP stream), outside this runner's environment.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TAP|_TAPJS|NODE_OPTIONS)/.test(k)))
  const result = await run(join(ROOT, 'node_modules', '.bin', 'tsx'), ['tests/http/process.test.ts'], {
    cwd: ROOT,
    env: { ...env, GPUHOOKS_SERVICE_DIR: app },
    maxBuffer: 16 << 20
  }).then(
    (r) => ({ code: 0, out: r.stdout }),
    (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? '' })
  )
  t.equal(result.code, 0, result.code === 0 ? 'passed' : result.out.slice(-4000))
  t.notMatch(result.out, /^\s*not ok/m)
  t.match(result.out, /^ok \d+ - with TLS the admission listener serves HTTPS on WEBHOOK_PORT/m)
})

t.test('the built service starts and answers a hook; start time and memory', async (t) => {
  const [port, webhookPort] = (await freePorts(2)) as [number, number]
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, ['dist/hooks/main.js'], {
    cwd: app,
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port), WEBHOOK_PORT: String(webhookPort) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  let output = ''
  child.stdout.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr.on('data', (c: Buffer) => (output += c.toString()))
  for (let i = 0; i < 300 && !/hooks listening/.test(output); i++) {
    if (child.exitCode !== null) break
    await new Promise((r) => setTimeout(r, 50))
  }
  t.match(output, /hooks listening over HTTP/)
  const startMs = Number(process.hrtime.bigint() - started) / 1e6
  const body = JSON.stringify({ parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } })
  const response = await fetch(`http://127.0.0.1:${port}/hooks/isolation/customize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body
  })
  t.equal(response.status, 200)
  t.match(await response.json(), { relatedResources: [{ resource: 'instances', namespace: 'team-a' }, { resource: 'settings' }] })
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
  t.comment(
    `start to listening: ${startMs.toFixed(0)} ms; RSS after one hook call: ${rss === null ? '?' : (Number(rss[1]) / 1024).toFixed(0)} MiB (node ${process.version})`
  )
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM exits 0')
})

t.test('the render CLI and the certificate entry point run on production dependencies', async (t) => {
  const render = await run(
    process.execPath,
    [
      'dist/hooks/cli/render.js',
      'render',
      join(ROOT, 'deploy', 'examples', 'instance-cpu.yaml'),
      '--related',
      join(ROOT, 'deploy', 'examples', 'hami.yaml')
    ],
    { cwd: app }
  )
  t.match(render.stdout, /kind: Pod\n/)
  const certs = await run(process.execPath, ['dist/hooks/certs/main.js'], { cwd: app, env: { PATH: process.env['PATH'] ?? '' } }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code?: number; stderr?: string }) => ({ code: err.code ?? 0, stderr: err.stderr ?? '' })
  )
  t.equal(certs.code, 1)
  t.match(certs.stderr, /invalid environment: NAMESPACE is required/, 'loads, reads its environment, refuses to guess')
})

t.test('the workload agent entry point loads on production dependencies and says what it lacks', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'gpuhooks-home-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  // No KUBECONFIG, no ~/.kube/config, not in a Pod: a clear message and exit 1, no stack.
  const agent = await run(process.execPath, ['dist/hooks/agent/main.js'], {
    cwd: app,
    env: { PATH: process.env['PATH'] ?? '', HOME: home }
  }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code?: number; stderr?: string }) => ({ code: err.code ?? 0, stderr: err.stderr ?? '' })
  )
  t.equal(agent.code, 1)
  t.match(agent.stderr, /^workload agent failed to start: no infrastructure cluster: set KUBECONFIG, or run in a Pod/)
  t.notMatch(agent.stderr, /\n\s+at /, 'no stack trace')
})
