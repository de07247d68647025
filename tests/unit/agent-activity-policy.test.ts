/**
 * The ValidatingAdmissionPolicy that narrows the workload agent's Instance patches to the stop
 * (metacontroller/agent-instance-policy.yaml) compares the spec field by field: every field of
 * the Instance spec but `stop` must be listed, or a field added later would pass unguarded.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { InstanceSpecSchema } from '../../hooks/api/instance.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const [policy] = parseAllDocuments(readFileSync(join(ROOT, 'metacontroller', 'agent-instance-policy.yaml'), 'utf8')).map((d) => d.toJS())

t.test('every Instance spec field but stop is kept as it was', async (t) => {
  const expression = String(policy.spec.validations[1].expression)
  const fields = Object.keys(InstanceSpecSchema.properties).filter((k) => k !== 'stop')
  t.ok(fields.length > 5)
  for (const field of fields) {
    t.match(expression, `(!has(object.spec.${field}) || object.spec.${field} == oldObject.spec.${field})`, field)
  }
  t.match(expression, 'object.spec.stop == true')
})

t.test('only the agent is judged, and only its writes to instances', async (t) => {
  t.same(policy.spec.matchConstraints.resourceRules, [
    { apiGroups: ['worker.gpustack.ai'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['instances'] }
  ])
  t.same(policy.spec.matchConditions, [
    { name: 'the-workload-agent', expression: "request.userInfo.username == 'system:serviceaccount:gpuhooks:gpuhooks-workload-agent'" }
  ])
})
