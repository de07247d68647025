/**
 * The overload row of `npm run bench`: 40 concurrent 15 MiB bodies against the service as a real
 * process (`node --import tsx hooks/main.ts`, one process, so its peak RSS is the kernel's
 * VmHWM), with `/healthz` asked every 50 ms throughout. Run once with the default bounds and once
 * with the load bounds off, to show what they buy.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { Worker } from 'node:worker_threads'
import { freePorts } from '../support/ports.ts'

const BODIES = 40
const BODY_BYTES = 15 * 1024 * 1024
const MiB = 1024 * 1024

/** What one overload run saw. */
export interface OverloadRun {
  label: string
  peakRssMiB: number
  slowestHealthzMs: number
  healthzAsked: number
  codes: Record<string, number>
}

function post(port: number, body: Buffer, path = '/hooks/isolation/customize'): Promise<string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': body.length }
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(String(res.statusCode)))
      }
    )
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
    req.end(body)
  })
}

function healthz(port: number): Promise<number> {
  const started = process.hrtime.bigint()
  return new Promise((resolve) => {
    request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1e6))
    })
      .on('error', () => resolve(Number.POSITIVE_INFINITY))
      .end()
  })
}

/**
 * Asks `/healthz` every 50 ms from a worker thread, so that the main thread pushing 600 MiB of
 * bodies does not delay the probe's own clock; resolves with every latency once told to stop.
 */
function probeInWorker(port: number): { stop: () => Promise<number[]> } {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    const http = require('node:http')
    let done = false
    const latencies = []
    parentPort.on('message', () => { done = true })
    const ask = () => new Promise((resolve) => {
      const started = process.hrtime.bigint()
      http.request({ host: '127.0.0.1', port: workerData, path: '/healthz', agent: false }, (res) => {
        res.resume()
        res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1e6))
      }).on('error', () => resolve(Infinity)).end()
    })
    ;(async () => {
      while (!done) {
        latencies.push(await ask())
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      parentPort.postMessage(latencies)
    })()
  `
  const worker = new Worker(code, { eval: true, workerData: port })
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (latencies: number[]) => {
          void worker.terminate()
          resolve(latencies)
        })
        worker.postMessage('stop')
      })
  }
}

/** The service as its own process, started with `env`, for `run`; its peak RSS (VmHWM) after it. */
async function withService<T>(env: Record<string, string>, run: (port: number) => Promise<T>): Promise<{ result: T; peakRssMiB: number }> {
  const [port] = (await freePorts(1)) as [number]
  const child = spawn(process.execPath, ['--import', 'tsx', 'hooks/main.ts'], {
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'error', SHUTDOWN_DELAY_SECONDS: '0', ...env },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  try {
    for (let i = 0; i < 300; i++) {
      if (Number.isFinite(await healthz(port))) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const result = await run(port)
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
    const hwmKiB = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 'NaN')
    return { result, peakRssMiB: hwmKiB / 1024 }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}

/** One run against a fresh process started with `env`. */
export async function overloadRun(label: string, env: Record<string, string>): Promise<OverloadRun> {
  const json = JSON.stringify({ controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } })
  const body = Buffer.from(json + ' '.repeat(BODY_BYTES - json.length))
  const { result, peakRssMiB } = await withService(env, async (port) => {
    const prober = probeInWorker(port)
    const codes: Record<string, number> = {}
    for (const code of await Promise.all(Array.from({ length: BODIES }, () => post(port, body)))) codes[code] = (codes[code] ?? 0) + 1
    return { codes, latencies: await prober.stop() }
  })
  return {
    label,
    peakRssMiB,
    slowestHealthzMs: Math.max(...result.latencies),
    healthzAsked: result.latencies.length,
    codes: result.codes
  }
}

const answers = (codes: readonly string[]): string => {
  const counts: Record<string, number> = {}
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1
  return Object.entries(counts)
    .sort()
    .map(([c, n]) => `${n}× ${c}`)
    .join(', ')
}

/**
 * The largest legal pool sync against the service as its own process, with the default bounds:
 * ten requests one after another (Metacontroller syncs one pool at a time), then four at once
 * (four such pools on its five workers; a fifth would wait for the 64 MiB in-flight bound).
 * Each on a fresh process, so each peak RSS is that pattern's alone.
 */
export async function largestPoolTable(name: string, json: string): Promise<string[]> {
  const body = Buffer.from(json)
  const path = '/hooks/cellpool/sync'
  const timed = async (port: number): Promise<{ code: string; ms: number }> => {
    const started = performance.now()
    const code = await post(port, body, path)
    return { code, ms: performance.now() - started }
  }
  const sequential = await withService({}, async (port) => {
    const out: Array<{ code: string; ms: number }> = []
    for (let i = 0; i < 10; i++) out.push(await timed(port))
    return out
  })
  const concurrent = await withService({}, async (port) => Promise.all(Array.from({ length: 4 }, () => timed(port))))
  const row = (label: string, run: { result: Array<{ code: string; ms: number }>; peakRssMiB: number }): string =>
    `| ${label} | ${run.peakRssMiB.toFixed(0)} MiB | ${Math.max(...run.result.map((r) => r.ms)).toFixed(0)} ms | ${answers(run.result.map((r) => r.code))} |`
  return [
    `| ${name}, ${(body.length / MiB).toFixed(1)} MiB, to the service process | peak RSS | slowest answer | answers |`,
    '| --- | --- | --- | --- |',
    row('10 one after another', sequential),
    row('4 at once', concurrent)
  ]
}

/** The overload table: defaults, then the load bounds off. */
export async function overloadTable(): Promise<string[]> {
  const runs = [
    await overloadRun('default bounds', {}),
    await overloadRun('load bounds off', { MAX_INFLIGHT_BYTES: '0', MAX_EVENT_LOOP_DELAY_MS: '0', MAX_HEAP_USED_BYTES: '0' })
  ]
  return [
    `| overload: ${BODIES} concurrent ${BODY_BYTES / MiB} MiB bodies | peak RSS | slowest /healthz (of those asked every 50 ms) | answers |`,
    '| --- | --- | --- | --- |',
    ...runs.map(
      (r) =>
        `| ${r.label} | ${r.peakRssMiB.toFixed(0)} MiB | ${r.slowestHealthzMs.toFixed(0)} ms (${r.healthzAsked} asked) | ${answers(
          Object.entries(r.codes).flatMap(([c, n]) => Array.from({ length: n }, () => c))
        )} |`
    )
  ]
}
