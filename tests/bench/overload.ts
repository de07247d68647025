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

function post(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/hooks/isolation/customize',
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

/** One run against a fresh process started with `env`. */
export async function overloadRun(label: string, env: Record<string, string>): Promise<OverloadRun> {
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
    const json = JSON.stringify({ controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } })
    const body = Buffer.from(json + ' '.repeat(BODY_BYTES - json.length))
    const prober = probeInWorker(port)
    const codes: Record<string, number> = {}
    for (const code of await Promise.all(Array.from({ length: BODIES }, () => post(port, body)))) codes[code] = (codes[code] ?? 0) + 1
    const latencies = await prober.stop()
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
    const hwmKiB = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 'NaN')
    return { label, peakRssMiB: hwmKiB / 1024, slowestHealthzMs: Math.max(...latencies), healthzAsked: latencies.length, codes }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
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
        `| ${r.label} | ${r.peakRssMiB.toFixed(0)} MiB | ${r.slowestHealthzMs.toFixed(0)} ms (${r.healthzAsked} asked) | ${Object.entries(
          r.codes
        )
          .sort()
          .map(([c, n]) => `${n}× ${c}`)
          .join(', ')} |`
    )
  ]
}
