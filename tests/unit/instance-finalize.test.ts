import t from 'tap'
import { finalize } from '../../hooks/instance/finalize.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { NOW, NAME, NS, POD_STATUS, baseSpec, instance, observedPod, observedService, request } from './fixtures/instance.ts'

const pod = observedPod(
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: NAME, namespace: NS, annotations: { 'worker.gpustack.ai/instance-generation': '1' } },
    spec: { containers: [{ name: 'main', image: 'img' }] }
  },
  POD_STATUS.running,
  { node: 'gpu-1' }
)
const svc = observedService([{ port: 8888, nodePort: 31001 }])
const parent = instance(baseSpec({ ports: [{ port: 8888 }] }), { deleting: true })

const rows: Array<{ name: string; children: KubeObject[]; expected: { children: KubeObject[]; finalized: boolean; message: string } }> = [
  {
    name: 'with a Pod observed the answer leaves the Pod out and keeps the Service as it is',
    children: [pod, svc],
    expected: { children: [keepAsIs(svc)], finalized: false, message: 'Deleting: waiting for Pod ws to terminate.' }
  },
  {
    name: 'with a Pod and no Service observed the answer is empty and not final',
    children: [pod],
    expected: { children: [], finalized: false, message: 'Deleting: waiting for Pod ws to terminate.' }
  },
  {
    name: 'once no Pod is observed the answer has no children, so the Service goes',
    children: [svc],
    expected: { children: [], finalized: false, message: 'Deleting: removing Service ws.' }
  },
  {
    name: 'finalized only once no child is observed',
    children: [],
    expected: { children: [], finalized: true, message: 'Deleting: every child is gone.' }
  }
]
for (const row of rows) {
  t.test(row.name, async (t) => {
    const answer = finalize(request({ parent, children: row.children, finalizing: true }), NOW)
    t.strictSame(answer.children, row.expected.children)
    t.equal(answer.finalized, row.expected.finalized)
    t.strictSame([answer.status.phase, answer.status.message], ['Deleting', row.expected.message])
  })
}

t.test('a spec error does not hold the teardown up', async (t) => {
  const answer = finalize(request({ parent: instance({ type: 'a100' }, { deleting: true }), children: [pod, svc], finalizing: true }), NOW)
  t.strictSame(answer.children, [keepAsIs(svc)])
  t.equal(answer.status.phase, 'Deleting')
})

t.test('the finalize answer carries children, status and finalized only', async (t) => {
  t.strictSame(Object.keys(finalize(request({ parent, finalizing: true }), NOW)).sort(), ['children', 'finalized', 'status'])
})

t.test('Ready is False with reason Deleting while finalizing', async (t) => {
  const answer = finalize(request({ parent, children: [pod, svc], finalizing: true }), NOW)
  const ready = (answer.status.conditions as Array<Record<string, unknown>>)[0]
  t.strictSame([ready?.type, ready?.status, ready?.reason], ['Ready', 'False', 'Deleting'])
})
