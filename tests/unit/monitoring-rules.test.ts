/**
 * The alerts and recording rules of deploy/chart/gpuhooks/files/monitoring/: `promtool check
 * rules` on every file, and `promtool test rules` on the cases of tests/rules/ (series written
 * for each case, the alerts and samples expected written out). A copy of the rules with the
 * Instance join loosened must fail those cases, so they are shown to be able to fail.
 *
 * promtool as tests/support/tools.ts finds it: skipped without it, with the reason, except in CI.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CHART, ROOT } from '../../deploy/chart/generate.ts'
import { findPromtool } from '../support/tools.ts'

const MONITORING = join(CHART, 'files', 'monitoring')
const CASES = join(ROOT, 'tests', 'rules')
const ruleFiles = readdirSync(MONITORING)
  .filter((f) => f.endsWith('.rules.yaml'))
  .sort()
const caseFiles = readdirSync(CASES)
  .filter((f) => f.endsWith('.test.yaml'))
  .sort()

const promtool = findPromtool()
if ('skip' in promtool) {
  t.plan(0, promtool.skip)
} else {
  const run = (args: string[]) => spawnSync(promtool.path, args, { encoding: 'utf8', cwd: ROOT })

  t.test('every rule file has its cases, and every case file tests a rule file', async (t) => {
    t.same(
      caseFiles.map((f) => f.replace('.test.yaml', '')),
      ruleFiles.map((f) => f.replace('.rules.yaml', ''))
    )
  })

  for (const file of ruleFiles) {
    t.test(`promtool check rules ${file}`, async (t) => {
      const result = run(['check', 'rules', join(MONITORING, file)])
      t.equal(result.status, 0, `${result.stdout}${result.stderr}`)
      t.match(result.stdout, /SUCCESS: \d+ rules found/)
    })
  }

  for (const file of caseFiles) {
    t.test(`promtool test rules tests/rules/${file}`, async (t) => {
      const result = run(['test', 'rules', join(CASES, file)])
      t.equal(result.status, 0, `${result.stdout}${result.stderr}`)
      t.match(result.stdout, 'SUCCESS')
    })
  }

  t.test('the cases fail when the Instance join stops requiring an Instance as the Pod controller', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-rules-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    // The case file names its rule file relative to itself: the same layout in the copy.
    cpSync(CASES, join(dir, 'tests', 'rules'), { recursive: true })
    const target = join(dir, 'deploy', 'chart', 'gpuhooks', 'files', 'monitoring')
    cpSync(MONITORING, target, { recursive: true })
    const source = readFileSync(join(target, 'instance.rules.yaml'), 'utf8')
    const loosened = source.replace('created_by_kind="Instance", ', '')
    t.not(loosened, source, 'the join names the controller kind')
    writeFileSync(join(target, 'instance.rules.yaml'), loosened)
    const result = spawnSync(promtool.path, ['test', 'rules', join(dir, 'tests', 'rules', 'instance.test.yaml')], { encoding: 'utf8' })
    t.not(result.status, 0)
    t.match(`${result.stdout}${result.stderr}`, 'jupyter', 'the ReplicaSet Pod now counts as an Instance')
  })
}
