/**
 * `npm run bench:profile`: where one hook request's CPU goes. Answers one payload of `npm run
 * bench` (by default the Instance sync and the admission review) many times in-process through
 * the app's full request path (`inject`: routing, body parsing, schema validation, the hook,
 * serialisation, the ETag), under the V8 profiler, and prints the functions with the most self
 * time and the share of the hook's own call. Nothing here asserts a timing. The profiles are
 * written to `--dir` (default <tmpdir>/gpuhooks-profiles) for a flame-graph viewer.
 *
 * It then compares CPU per request with a bare fastify echo of the same payload, in alternating
 * batches (hook, echo, hook, ...) so that both see the same machine: on a shared machine the
 * request rates of `npm run bench` move with everyone else's load, CPU per request much less.
 *
 *   npm run bench:profile -- [--payload instance|admission|all] [--seconds 10] [--dir DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Session } from 'node:inspector/promises'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildApp, DEFAULT_BODY_LIMIT } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { payloads, type Payload } from './payloads.ts'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback
}

const SELECT: Record<string, (p: Payload) => boolean> = {
  instance: (p) => p.path === '/hooks/instance/sync',
  admission: (p) => p.path === '/admission/instance'
}

/** Self time per function (name + file:line), in ms, the largest first. */
export function topSelf(profile: Profile, limit: number): Array<{ ms: number; share: number; frame: string }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  for (const [i, id] of profile.samples.entries()) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const byFrame = new Map<string, number>()
  for (const [id, us] of self) {
    const f = byId.get(id)?.callFrame
    if (f === undefined) continue
    const file = f.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(hooks|tests)\//, '$1/')
    const frame = `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + us)
  }
  return [...byFrame]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([frame, us]) => ({ ms: us / 1000, share: us / total, frame }))
}

/** Inclusive time of every frame whose function name matches, in ms, and the profile total. */
export function inclusive(profile: Profile, match: (name: string, url: string) => boolean): { ms: number; totalMs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  let hit = 0
  let total = 0
  for (const [i, id] of profile.samples.entries()) {
    const dt = profile.timeDeltas[i] ?? 0
    total += dt
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame
      if (f !== undefined && match(f.functionName, f.url)) {
        hit += dt
        break
      }
    }
  }
  return { ms: hit / 1000, totalMs: total / 1000 }
}

/** Median CPU per request, hook and echo, over alternating batches; and echo/hook, the throughput ratio. */
async function compareWithEcho(hook: FastifyInstance, echo: FastifyInstance, payload: Payload): Promise<string> {
  const request = { method: 'POST' as const, url: payload.path, payload: payload.body, headers: { 'content-type': 'application/json' } }
  const batch = async (app: FastifyInstance, n: number): Promise<number> => {
    const before = process.cpuUsage()
    for (let i = 0; i < n; i++) await app.inject(request)
    const used = process.cpuUsage(before)
    return (used.user + used.system) / n
  }
  await batch(echo, 300)
  const hooks: number[] = []
  const echoes: number[] = []
  const ratios: number[] = []
  for (let b = 0; b < 15; b++) {
    const h = await batch(hook, 200)
    const e = await batch(echo, 200)
    hooks.push(h)
    echoes.push(e)
    ratios.push(e / h)
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? 0
  return `CPU per request (median of 15 alternating batches of 200): hook ${median(hooks).toFixed(0)} µs, echo ${median(echoes).toFixed(0)} µs; echo/hook ${median(ratios).toFixed(2)}`
}

async function main(): Promise<void> {
  const which = option('payload', 'all')
  const seconds = Number(option('seconds', '10'))
  const dir = resolve(option('dir', join(tmpdir(), 'gpuhooks-profiles')))
  mkdirSync(dir, { recursive: true })
  const list = payloads().filter((p) =>
    which === 'all' ? SELECT.instance?.(p) === true || SELECT.admission?.(p) === true : SELECT[which]?.(p) === true
  )
  if (list.length === 0) throw new Error(`--payload ${which}: choose instance, admission or all`)
  const app = await buildApp({ routes })
  const echo = Fastify({ bodyLimit: DEFAULT_BODY_LIMIT })
  echo.post('/*', async (request) => request.body)
  const session = new Session()
  session.connect()
  for (const payload of list) {
    const request = { method: 'POST' as const, url: payload.path, payload: payload.body, headers: { 'content-type': 'application/json' } }
    const check = await app.inject(request)
    if (check.statusCode !== 200 || payload.check(check.json()) !== undefined)
      throw new Error(`${payload.name}: unexpected answer ${check.statusCode}`)
    for (let i = 0; i < 300; i++) await app.inject(request)
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
    await session.post('Profiler.start')
    const until = Date.now() + seconds * 1000
    const cpuBefore = process.cpuUsage()
    let n = 0
    while (Date.now() < until) {
      await app.inject(request)
      n++
    }
    const cpu = process.cpuUsage(cpuBefore)
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile }
    await session.post('Profiler.disable')
    const file = join(dir, `${payload.path.replaceAll('/', '_').replace(/^_/, '')}-${Date.now()}.cpuprofile`)
    writeFileSync(file, JSON.stringify(profile))
    // The route's `handle` is the hook's own call: everything else is transport.
    const handler = inclusive(profile, (_name, url) => url.endsWith('/hooks/server/routes.ts'))
    console.log(
      `## ${payload.name}: ${n} requests in ${seconds} s, ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} ms of CPU each (${file})`
    )
    console.log(
      `hook function (inclusive): ${((handler.ms / handler.totalMs) * 100).toFixed(1)} % of ${handler.totalMs.toFixed(0)} ms sampled`
    )
    console.log('| self ms | share | function |')
    console.log('| ---: | ---: | --- |')
    for (const row of topSelf(profile, 20)) console.log(`| ${row.ms.toFixed(0)} | ${(row.share * 100).toFixed(1)} % | ${row.frame} |`)
    console.log('')
    console.log(await compareWithEcho(app, echo, payload))
    console.log('')
  }
  session.disconnect()
  await Promise.all([app.close(), echo.close()])
}

await main()
