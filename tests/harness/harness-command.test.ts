/**
 * The cluster harness's command runner (tests/cluster/support/cluster.ts `runCommand`, behind
 * every kubectl call): a command that exits before reading its input is that command's failure,
 * with its exit code and stderr, and never an unhandled EPIPE that ends the test file.
 */
import t from 'tap'
import { runCommand } from '../cluster/support/cluster.ts'

/** Far more than a pipe buffers (64 KiB on Linux): the writer is still writing when the reader exits. */
const LARGE_INPUT = 'x'.repeat(4 * 1024 * 1024)

t.test('a command that exits non-zero without reading its input is reported with its code and stderr', async (t) => {
  const result = await runCommand('sh', ['-c', 'echo refused the input >&2; exit 3'], { input: LARGE_INPUT })
  t.equal(result.code, 3)
  t.equal(result.stderr, 'refused the input\n')
  t.equal(result.stdout, '')
})

t.test('many early exits in a row never crash the test process', async (t) => {
  // The broken pipe races the exit: sometimes EPIPE lands first, sometimes the exit does.
  const codes = await Promise.all(
    Array.from({ length: 20 }, () => runCommand('sh', ['-c', 'exit 3'], { input: LARGE_INPUT }).then((r) => r.code))
  )
  t.same(
    codes,
    Array.from({ length: 20 }, () => 3)
  )
})

t.test('a command that exits 0 without reading its input is a failure that names it', async (t) => {
  await t.rejects(runCommand('true', [], { input: LARGE_INPUT }), /^true exited 0 before reading its input of 4194304 bytes/)
})

t.test('a command that reads all of its input succeeds with what it printed', async (t) => {
  const result = await runCommand('cat', [], { input: LARGE_INPUT })
  t.equal(result.code, 0)
  t.equal(result.stdout.length, LARGE_INPUT.length)
  t.ok(result.stdout === LARGE_INPUT, 'stdout is the input, byte for byte')
  t.equal(result.stderr, '')
})

t.test('a command without input that exits 0 before stdin closes is a success', async (t) => {
  const result = await runCommand('sh', ['-c', 'echo done'])
  t.same(result, { code: 0, stdout: 'done\n', stderr: '' })
})

t.test('a command that cannot be started is a rejection naming it, not a crash', async (t) => {
  await t.rejects(
    runCommand('gpuhooks-no-such-command', ['x'], { input: LARGE_INPUT }),
    /gpuhooks-no-such-command could not be run: spawn gpuhooks-no-such-command ENOENT/
  )
})
