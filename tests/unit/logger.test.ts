import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { childEnv } from '../support/child-env.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const moduleUrl = (...path: string[]): string => JSON.stringify(pathToFileURL(join(ROOT, ...path)).href)

/**
 * Runs a script that logs "draining" and "stopped" and ends with process.exit, as the hook
 * service does, while libuv's only thread-pool thread is busy (a long pbkdf2): an asynchronous
 * write queued there has not happened by the exit. Answers the messages as they reached the pipe.
 */
function logAndExit(makeLogger: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-logger-'))
  try {
    const script = join(dir, 'script.ts')
    writeFileSync(
      script,
      [
        `import { pbkdf2 } from 'node:crypto'`,
        `import { pino } from ${moduleUrl('node_modules', 'pino', 'pino.js')}`,
        `import { processLogger } from ${moduleUrl('hooks', 'logger.ts')}`,
        `void pino`,
        `void processLogger`,
        `const log = ${makeLogger}`,
        `pbkdf2('busy', 'pool', 2_000_000, 32, 'sha256', () => {})`,
        `log.info('draining')`,
        `log.info('stopped')`,
        `process.exit(0)`
      ].join('\n')
    )
    const run = spawnSync(TSX, [script], { encoding: 'utf8', env: childEnv({ UV_THREADPOOL_SIZE: '1' }) })
    if (run.status !== 0) throw new Error(`script failed (${String(run.status)}): ${run.stderr}`)
    return run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => String((JSON.parse(line) as { msg: unknown }).msg))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

t.test('the process logger keeps every line, in order, up to process.exit', async (t) => {
  t.same(logAndExit(`processLogger({ level: 'info' })`), ['draining', 'stopped'])
})

t.test("pino's default destination, asynchronous, loses or reorders them (why the processes do not use it)", async (t) => {
  t.notSame(logAndExit(`pino({ level: 'info' })`), ['draining', 'stopped'])
})
