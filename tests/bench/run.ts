/**
 * `npm run bench` (docs/testing.md, "Benchmarks (not tests)"): the hook service under load, against a
 * bare fastify app that echoes the same payloads, both started here on loopback ports.
 *
 * The echo parses each body and serialises it back with no schema and no hook: what HTTP and JSON
 * cost on their own. hook/echo near 1 means the hooks add little to the transport; the echo also
 * sends the whole payload back where a hook answers a few KiB, so on the largest request the hook
 * can beat it.
 *
 * autocannon runs on a worker thread: on the main event loop it would compete with the servers it
 * measures. Figures go into docs/benchmarks.md with the header this prints. Exits 1 when a hook answer is
 * wrong or any hook response is not 200; nothing here asserts a timing.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import autocannon from 'autocannon'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildApp, DEFAULT_BODY_LIMIT } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { largestPoolPayload, payloads, type Payload } from './payloads.ts'
import { largestPoolTable, overloadTable } from './overload.ts'

const CONNECTIONS = 10
const WARMUP_SECONDS = 1
const DURATION_SECONDS = 8
/**
 * Four payloads and the largest pool × two servers × 9 s is about 90 s, the overload and largest-pool
 * process runs about a minute more; past this something hangs.
 */
const DEADLINE_MS = 360_000

const MiB = 1024 * 1024

/** One measured run: autocannon's result and the process memory during and right after it. */
interface Run {
  result: autocannon.Result
  /** Requests of the warm-up and the run that got no 200 (another status, an error, a timeout). */
  failed: number
  codes: Record<string, number>
  /** Highest resident set of the process during the warm-up and the run. */
  peakRss: number
  heapUsed: number
}

/**
 * The process's peak resident set since the last {@link resetPeakRss}: the kernel's high-water
 * mark (VmHWM) where it can be reset, else the highest of samples taken every 20 ms.
 */
const peak = { sampled: 0, kernel: false, timer: undefined as NodeJS.Timeout | undefined }

function vmHwm(): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    return match === null ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}

function resetPeakRss(): void {
  try {
    // Linux: writing 5 to clear_refs resets VmHWM to the current resident set.
    writeFileSync('/proc/self/clear_refs', '5')
    peak.kernel = vmHwm() !== undefined
  } catch {
    peak.kernel = false
  }
  peak.sampled = process.memoryUsage.rss()
  if (!peak.kernel && peak.timer === undefined) {
    peak.timer = setInterval(() => (peak.sampled = Math.max(peak.sampled, process.memoryUsage.rss())), 20)
    peak.timer.unref()
  }
}

function peakRss(): number {
  const now = process.memoryUsage.rss()
  return Math.max(now, peak.kernel ? (vmHwm() ?? 0) : peak.sampled)
}

/** The baseline: every POST path answers its JSON body, parsed and serialised again. */
function echoApp(): FastifyInstance {
  const app = Fastify({ bodyLimit: DEFAULT_BODY_LIMIT })
  app.post('/*', async (request) => request.body)
  return app
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

async function load(url: string, body: string, duration: number, connections = CONNECTIONS): Promise<autocannon.Result> {
  return await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections,
    duration,
    timeout: 10,
    workers: 1
  })
}

/** Responses that were not 200, by status code, plus errors and timeouts as `error`. */
function failures(result: autocannon.Result): Record<string, number> {
  const codes: Record<string, number> = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) if (code !== '200') codes[code] = count
  if (result.errors > 0) codes.error = result.errors
  return codes
}

async function measure(url: string, payload: Payload, connections = CONNECTIONS): Promise<Run> {
  resetPeakRss()
  const warmup = await load(url, payload.body, WARMUP_SECONDS, connections)
  const result = await load(url, payload.body, DURATION_SECONDS, connections)
  const { heapUsed } = process.memoryUsage()
  const peakRssBytes = peakRss()
  const codes = failures(warmup)
  for (const [code, n] of Object.entries(failures(result))) codes[code] = (codes[code] ?? 0) + n
  const failed = Object.values(codes).reduce((a, b) => a + b, 0)
  return { result, failed, codes, peakRss: peakRssBytes, heapUsed }
}

/**
 * Answers each payload once in-process: the hook must answer 200 and as expected, the echo must
 * echo. Returns the problems and the size of each hook answer.
 */
async function preflight(
  hook: FastifyInstance,
  echo: FastifyInstance,
  list: readonly Payload[]
): Promise<{ problems: string[]; answers: Map<Payload, number> }> {
  const problems: string[] = []
  const answers = new Map<Payload, number>()
  for (const p of list) {
    const request = { method: 'POST' as const, url: p.path, payload: p.body, headers: { 'content-type': 'application/json' } }
    const answer = await hook.inject(request)
    answers.set(p, answer.rawPayload.length)
    if (answer.statusCode !== 200) problems.push(`${p.name}: hook answered ${answer.statusCode}: ${answer.body.slice(0, 500)}`)
    else {
      const wrong = p.check(answer.json())
      if (wrong !== undefined) problems.push(`${p.name}: ${wrong}`)
    }
    const echoed = await echo.inject(request)
    if (echoed.statusCode !== 200 || echoed.body !== p.body) problems.push(`${p.name}: the echo did not answer the payload back`)
  }
  return { problems, answers }
}

const rate = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(1))
const latency = (r: autocannon.Result): string => `${r.latency.p50} / ${r.latency.p97_5} / ${r.latency.p99}`
const mib = (bytes: number): string => (bytes / MiB).toFixed(1)
const size = (bytes: number): string => (bytes >= MiB ? `${mib(bytes)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`)

function header(): string[] {
  const require = createRequire(import.meta.url)
  const version = (name: string): string => (require(`${name}/package.json`) as { version: string }).version
  const cpus = os.cpus()
  const command =
    process.env.npm_lifecycle_event === 'bench'
      ? `npm run bench  (${process.env.npm_lifecycle_script ?? 'tsx tests/bench/run.ts'})`
      : 'tsx tests/bench/run.ts'
  return [
    `command: ${command}`,
    `machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB, ${os.type()} ${os.release()} ${os.arch()}`,
    `runtime: Node ${process.version}, fastify ${version('fastify')}, autocannon ${version('autocannon')}`,
    `load: POST over 127.0.0.1, ${CONNECTIONS} connections from 1 autocannon worker thread, ${WARMUP_SECONDS} s warm-up (not counted) + ${DURATION_SECONDS} s per server and payload; hook app and echo app in this one process`
  ]
}

function table(rows: ReadonlyArray<{ payload: Payload; hook: Run; echo: Run }>, answers: ReadonlyMap<Payload, number>): string[] {
  const head = [
    'payload',
    'request / hook answer',
    'hook req/s',
    'echo req/s',
    'hook/echo',
    'hook p50 / p97.5 / p99 ms',
    'echo p50 / p97.5 / p99 ms',
    'peak RSS MiB hook / echo',
    'heap MiB after hook / echo',
    'hook non-200'
  ]
  const body = rows.map(({ payload, hook, echo }) => [
    payload.name,
    `${size(Buffer.byteLength(payload.body))} / ${size(answers.get(payload) ?? 0)}`,
    rate(hook.result.requests.average),
    rate(echo.result.requests.average),
    (hook.result.requests.average / echo.result.requests.average).toFixed(2),
    latency(hook.result),
    latency(echo.result),
    `${mib(hook.peakRss)} / ${mib(echo.peakRss)}`,
    `${mib(hook.heapUsed)} / ${mib(echo.heapUsed)}`,
    String(hook.failed)
  ])
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...body.map(line)]
}

async function main(): Promise<number> {
  const deadline = setTimeout(() => {
    console.error(`bench: not finished after ${DEADLINE_MS / 1000} s; giving up`)
    process.exit(1)
  }, DEADLINE_MS)
  deadline.unref()

  const list = payloads()
  const hook = await buildApp({ routes })
  const echo = echoApp()
  try {
    const { problems, answers } = await preflight(hook, echo, list)
    if (problems.length > 0) {
      for (const p of problems) console.error(`bench: ${p}`)
      return 1
    }
    const idleRss = process.memoryUsage.rss()
    const hookUrl = await listen(hook)
    const echoUrl = await listen(echo)
    for (const line of header()) console.log(line)
    console.log('')

    // The largest legal pool first: its CellNodeSet status was observed just now, and a workload
    // cluster observed more than 2 minutes ago would change what the hook answers.
    const largest = largestPoolPayload()
    const checked = await preflight(hook, echo, [largest])
    if (checked.problems.length > 0) {
      for (const p of checked.problems) console.error(`bench: ${p}`)
      return 1
    }
    console.error(`bench: ${largest.name} …`)
    const largestRow = {
      payload: largest,
      hook: await measure(hookUrl + largest.path, largest, 1),
      echo: await measure(echoUrl + largest.path, largest, 1)
    }

    const rows: Array<{ payload: Payload; hook: Run; echo: Run }> = []
    for (const payload of list) {
      console.error(`bench: ${payload.name} …`)
      rows.push({ payload, hook: await measure(hookUrl + payload.path, payload), echo: await measure(echoUrl + payload.path, payload) })
    }
    for (const line of table(rows, answers)) console.log(line)
    console.log('')
    console.log(
      "Latency in whole milliseconds (autocannon's resolution). Peak RSS is the whole process (both apps and the load generator's thread) at its highest during the warm-up and the run of that server and payload" +
        `${peak.kernel ? " (the kernel's high-water mark, reset before each run)" : ' (sampled every 20 ms)'}; ` +
        `the process held ${mib(idleRss)} MiB before the first run. Heap is the V8 heap used of the main thread, both apps, read right after each run without forcing a GC.`
    )

    console.log('')
    console.log(
      `The largest GPUCellPool sync the bounds allow (tests/bench/largest-pool.ts), one request at a time, as Metacontroller syncs one pool; same load otherwise:`
    )
    console.log('')
    for (const line of table([largestRow], checked.answers)) console.log(line)
    rows.push(largestRow)

    const answered = rows.reduce((n, r) => n + r.hook.result.requests.total, 0)
    const failed = rows.filter((r) => r.hook.failed > 0)
    if (failed.length > 0) {
      for (const r of failed) console.error(`bench: FAIL ${r.payload.name}: hook responses not 200: ${JSON.stringify(r.hook.codes)}`)
      return 1
    }
    const echoFailed = rows.filter((r) => r.echo.failed > 0)
    for (const r of echoFailed)
      console.error(`bench: warning: the echo baseline of ${r.payload.name} had failures: ${JSON.stringify(r.echo.codes)}`)
    console.log(`Every hook response was 200: ${answered} in the measured runs, and those of the warm-ups.`)
    console.log('')
    console.error('bench: overload …')
    for (const line of await overloadTable()) console.log(line)
    console.log('')
    console.error('bench: the largest legal pool, to the service process …')
    // Built again: its workload cluster counts as observed for 2 minutes after it is built.
    const fresh = largestPoolPayload()
    for (const line of await largestPoolTable(fresh.name, fresh.body)) console.log(line)
    return 0
  } finally {
    await Promise.all([hook.close(), echo.close()])
  }
}

process.exitCode = await main()
