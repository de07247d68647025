import t from 'tap'
import { reviewInstance } from '../../hooks/instance/admission.ts'
import type { AdmissionRequest, Verdict } from '../../hooks/admission/review.ts'
import { admissionRequests } from '../support/admission.ts'

const kind = { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' }
const spec = { type: 'a100', image: 'pytorch:2', ports: [{ port: 8888, protocol: 'TCP' }], stop: false }

function instance(s: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', metadata: { name: 'nb', namespace: 'team-a' }, spec: s, ...extra }
}
const running = (s: Record<string, unknown>): Record<string, unknown> => instance(s, { status: { phase: 'Running', podName: 'nb' } })
const neverRan = (s: Record<string, unknown>): Record<string, unknown> => instance(s, { status: { phase: 'Failed' } })

const request = admissionRequests({ kind, namespace: 'team-a', name: 'nb' })

const lock = (field: string): string => `spec.${field} cannot change while the Instance is running; set spec.stop: true first`

const KEEP = 'gpustack.ai/keep-running-until'
const annotated = (value: string, base = running(spec)): Record<string, unknown> => ({
  ...base,
  metadata: { name: 'nb', namespace: 'team-a', annotations: { [KEEP]: value } }
})
const keepProblem = `metadata.annotations[${KEEP}] must be an RFC 3339 time such as 2026-12-02T20:00:00Z (it postpones an idle stop until then)`

const cases: Array<{ name: string; given: AdmissionRequest; expected: Verdict }> = [
  {
    name: 'a running Instance may be postponed with an RFC 3339 time',
    given: request('UPDATE', annotated('2026-12-02T20:00:00Z'), running(spec)),
    expected: { problems: [] }
  },
  {
    name: 'a malformed postponement is refused, naming the annotation',
    given: request('UPDATE', annotated('tomorrow 8pm'), running(spec)),
    expected: { problems: [keepProblem] }
  },
  {
    name: 'a malformed postponement on create is refused too',
    given: request('CREATE', annotated('2026-12-02 20:00', instance(spec))),
    expected: { problems: [keepProblem] }
  },
  {
    name: 'a malformed postponement already stored does not block another write',
    given: request('UPDATE', annotated('soon', running({ ...spec, stop: true })), annotated('soon')),
    expected: { problems: [] }
  },
  { name: 'a valid Instance is admitted', given: request('CREATE', instance(spec)), expected: { problems: [] } },
  {
    name: 'every problem of a create is reported together',
    given: request(
      'CREATE',
      instance({
        ...spec,
        ports: [
          { port: 53, protocol: 'TCP' },
          { port: 53, protocol: 'UDP' }
        ],
        workspace: { size: '1Gi', claimName: 'c' }
      })
    ),
    expected: {
      problems: [
        'spec.ports[1]: port 53/UDP shares port 53 with 53/TCP; the Service merges ports by number, use distinct port numbers',
        'spec.workspace: size and claimName are exclusive; set size for an ephemeral workspace or claimName for an existing claim'
      ]
    }
  },
  {
    name: 'a name that cannot name the Service is refused when the Instance has ports',
    given: request('CREATE', { ...instance(spec), metadata: { name: '9lives', namespace: 'team-a' } }),
    expected: {
      problems: [
        "metadata.name 9lives cannot name the Instance's Service: a Service name must be a DNS-1035 label (lower-case letters, digits and -, starting with a letter and ending with a letter or digit)"
      ]
    }
  },
  {
    name: 'an object that is not an object is refused',
    given: request('CREATE', null),
    expected: { problems: ['object: CREATE carries no Instance object to check'] }
  },
  {
    name: 'a running Instance refuses a change other than stop',
    given: request('UPDATE', running({ ...spec, image: 'pytorch:3', ports: [] }), running(spec)),
    expected: { problems: [lock('image'), lock('ports')] }
  },
  {
    name: 'a running Instance refuses a field added or removed',
    given: request('UPDATE', running({ ...spec, nodeName: 'n1' }), running(spec)),
    expected: { problems: [lock('nodeName')] }
  },
  {
    name: 'a change made together with stop: true is refused, because the stored Instance still runs',
    given: request('UPDATE', running({ ...spec, stop: true, image: 'pytorch:3' }), running(spec)),
    expected: { problems: [lock('image')] }
  },
  {
    name: 'a running Instance may be stopped',
    given: request('UPDATE', running({ ...spec, stop: true }), running(spec)),
    expected: { problems: [] }
  },
  {
    name: 'an absent stop on the stored Instance counts as running',
    given: request('UPDATE', running({ type: 'a100', image: 'pytorch:3' }), running({ type: 'a100', image: 'pytorch:2' })),
    expected: { problems: [lock('image')] }
  },
  {
    name: 'a running Instance may change its metadata',
    given: request('UPDATE', { ...running(spec), metadata: { name: 'nb', namespace: 'team-a', labels: { team: 'ml' } } }, running(spec)),
    expected: { problems: [] }
  },
  {
    name: 'key order inside a field is no change',
    given: request('UPDATE', running({ ...spec, ports: [{ protocol: 'TCP', port: 8888 }] }), running(spec)),
    expected: { problems: [] }
  },
  {
    name: 'list order inside a field is a change',
    given: request('UPDATE', running({ ...spec, args: ['--b', '--a'] }), running({ ...spec, args: ['--a', '--b'] })),
    expected: { problems: [lock('args')] }
  },
  {
    name: 'a number and the same digits as a string are different values',
    given: request('UPDATE', running({ ...spec, resources: { cpu: 8 } }), running({ ...spec, resources: { cpu: '8' } })),
    expected: { problems: [lock('resources')] }
  },
  {
    name: 'a stopped Instance may be edited and started in one update',
    given: request('UPDATE', running({ ...spec, image: 'pytorch:3', stop: false }), running({ ...spec, stop: true })),
    expected: { problems: [] }
  },
  {
    name: 'an Instance that never got a Pod can be fixed in place',
    given: request('UPDATE', neverRan({ ...spec, type: 'h100' }), neverRan({ ...spec, type: 'a10O' })),
    expected: { problems: [] }
  },
  {
    name: 'an edit of a stopped Instance is still checked',
    given: request('UPDATE', instance({ ...spec, stop: true, ports: [{ port: 1, name: 'ssh' }] }), instance({ ...spec, stop: true })),
    expected: { problems: ['spec.ports[0].name ssh is reserved for the SSH sidecar; choose another name'] }
  },
  {
    name: 'a metadata-only update is admitted even when the stored spec breaks a rule',
    given: request(
      'UPDATE',
      instance({ ...spec, type: 't'.repeat(70) }, { metadata: { name: 'nb', finalizers: [] } }),
      instance({ ...spec, type: 't'.repeat(70) })
    ),
    expected: { problems: [] }
  },
  { name: 'DELETE is always allowed', given: request('DELETE', undefined, running(spec)), expected: { problems: [] } },
  { name: 'CONNECT is always allowed', given: request('CONNECT', undefined), expected: { problems: [] } }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.strictSame(reviewInstance(c.given), c.expected)
  })
}
