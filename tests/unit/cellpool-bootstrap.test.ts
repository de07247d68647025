import t from 'tap'
import {
  BOOTSTRAP_TOKENS,
  bootstrapValues,
  nodeLabelsToken,
  nodeTaintsToken,
  renderBootstrap,
  type BootstrapValues
} from '../../hooks/cellpool/bootstrap.ts'
import { resolvePool } from '../../hooks/cellpool/validate.ts'

const VALUES: BootstrapValues = {
  cellName: 'inference-3',
  poolName: 'inference',
  nodeLabels: 'cells.kubeswift.io/pool=inference,gpu=on',
  nodeIPInterface: 'routable',
  expectedGPUs: 1,
  nodeName: 'inference-3',
  cellIndex: 3,
  nodeTaints: 'example.com/gpu-cell=true:NoSchedule'
}

/** Renders a template that also carries {{ nodeLabels }} (required), returning the text or the problem. */
function render(template: string): string {
  const result = renderBootstrap(template, VALUES)
  return 'text' in result ? result.text : `PROBLEM: ${result.problem}`
}

t.test('each token is replaced by its value', async (t) => {
  const cases: Array<[string, string]> = [
    ['{{ cellName }}', 'inference-3'],
    ['{{ poolName }}', 'inference'],
    ['{{ nodeLabels }}', 'cells.kubeswift.io/pool=inference,gpu=on'],
    ['{{ nodeIPInterface }}', 'routable'],
    ['{{ expectedGPUs }}', '1'],
    ['{{ nodeName }}', 'inference-3'],
    ['{{ cellIndex }}', '3'],
    ['{{ nodeTaints }}', 'example.com/gpu-cell=true:NoSchedule']
  ]
  t.equal(cases.length, BOOTSTRAP_TOKENS.length, 'a case per token')
  for (const [token, value] of cases) {
    t.equal(render(`x=${token} labels={{ nodeLabels }}`), `x=${value} labels=cells.kubeswift.io/pool=inference,gpu=on`, token)
  }
})

t.test('spaces inside the braces are optional, and a token may repeat', async (t) => {
  t.equal(
    render('{{nodeLabels}} {{   cellName}} {{cellName   }} {{\tcellIndex\t}}'),
    'cells.kubeswift.io/pool=inference,gpu=on inference-3 inference-3 3'
  )
})

t.test('a bare name that is not a token is an error naming it', async (t) => {
  t.equal(
    render('--node-labels={{ nodeLable }}'),
    'PROBLEM: the join template uses {{ nodeLable }}, which is not a token; the tokens are {{ cellName }}, {{ poolName }}, ' +
      '{{ nodeLabels }}, {{ nodeIPInterface }}, {{ expectedGPUs }}, {{ nodeName }}, {{ cellIndex }}, {{ nodeTaints }}'
  )
  const result = renderBootstrap('{{ nodeLabels }} {{ zeta }} {{ alpha }} {{ zeta }} {{ cellname }}', VALUES)
  t.ok('problem' in result)
  if ('problem' in result)
    t.match(result.problem, /^the join template uses \{\{ alpha \}\}, \{\{ cellname \}\}, \{\{ zeta \}\}, which are not tokens;/)
})

t.test("anything else between braces, such as cloud-init's Jinja, is left exactly as written", async (t) => {
  const notTokens: Array<[text: string, why: string]> = [
    ['{{ v1.local_hostname }}', "a dotted name (cloud-init's Jinja)"],
    ['{{ ds.meta_data.instance_id }}', 'a dotted name with underscores'],
    ['{{ node_labels }}', 'an underscore'],
    ['{{ cellName | upper }}', 'a Jinja filter after a token name'],
    ['{% if v1.distro == "ubuntu" %}x{% endif %}', 'Jinja statements'],
    ['{ cellName }', 'single braces'],
    ['{{ }}', 'no name'],
    ['{{ 1cell }}', 'a name starting with a digit']
  ]
  for (const [text, why] of notTokens)
    t.equal(
      render(`## template: jinja\n${text}\n{{ nodeLabels }}`),
      `## template: jinja\n${text}\ncells.kubeswift.io/pool=inference,gpu=on`,
      `${why}: ${text}`
    )
})

t.test('a value that looks like a token is not expanded again', async (t) => {
  const result = renderBootstrap('{{ nodeLabels }} {{ poolName }}', { ...VALUES, poolName: '{{ cellName }}' })
  t.same(result, { text: 'cells.kubeswift.io/pool=inference,gpu=on {{ cellName }}' })
})

t.test('a template without {{ nodeLabels }} is an error', async (t) => {
  const result = renderBootstrap('#cloud-config\nruncmd:\n  - kubeadm join --node-name {{ nodeName }}\n', VALUES)
  t.ok('problem' in result)
  if ('problem' in result)
    t.match(result.problem, /^the join template has no \{\{ nodeLabels \}\}: the kubelet must register the cell labels/)
  t.match(render('   \n'), /^PROBLEM: the join template is empty$/)
})

t.test('nodeLabelsToken: sorted by key, self-settable labels only, cell labels win', async (t) => {
  const pool = {
    zone: 'a',
    gpu: 'on',
    'node-role.kubernetes.io/gpu-cell': '',
    'kubernetes.io/os': 'linux',
    'cells.kubeswift.io/cell': 'spoof'
  }
  const cell = {
    'cells.kubeswift.io/pool': 'p',
    'cells.kubeswift.io/pool-uid': 'u-1',
    'cells.kubeswift.io/cell': 'p-0',
    'cells.kubeswift.io/cell-index': '0'
  }
  t.equal(
    nodeLabelsToken(pool, cell),
    'cells.kubeswift.io/cell=p-0,cells.kubeswift.io/cell-index=0,cells.kubeswift.io/pool=p,cells.kubeswift.io/pool-uid=u-1,gpu=on,kubernetes.io/os=linux,zone=a'
  )
  t.equal(nodeLabelsToken({}, {}), '')
})

t.test('nodeTaintsToken: key=value:Effect or key:Effect, in spec order', async (t) => {
  t.equal(
    nodeTaintsToken([
      { key: 'z.example.com/b', value: 'x', effect: 'NoSchedule' },
      { key: 'a.example.com/a', effect: 'NoExecute' },
      { key: 'empty', value: '', effect: 'PreferNoSchedule' }
    ]),
    'z.example.com/b=x:NoSchedule,a.example.com/a:NoExecute,empty:PreferNoSchedule'
  )
  t.equal(nodeTaintsToken([]), '')
})

t.test('bootstrapValues of a cell', async (t) => {
  const pool = resolvePool({
    cell: { guestTemplate: {}, gpu: { dra: { resourceClaimTemplateName: 'vfio' } }, nodeIPFrom: 'lan' },
    bootstrap: { joinSecretRef: { name: 'join' } },
    workloadCluster: {
      kubeconfigSecretRef: { name: 'kc' },
      node: { labels: { gpu: 'on', 'node-role.kubernetes.io/gpu-cell': '' }, taints: [{ key: 'cell', effect: 'NoSchedule' }] }
    }
  })
  t.same(bootstrapValues('infer', 'uid-7', pool, 12), {
    cellName: 'infer-12',
    poolName: 'infer',
    nodeLabels:
      'cells.kubeswift.io/cell=infer-12,cells.kubeswift.io/cell-index=12,cells.kubeswift.io/pool=infer,cells.kubeswift.io/pool-uid=uid-7,gpu=on',
    nodeIPInterface: 'lan',
    expectedGPUs: 1,
    nodeName: 'infer-12',
    cellIndex: 12,
    nodeTaints: 'cell:NoSchedule'
  })
})

t.test('a gpucellpool join template renders unchanged but for its five tokens', async (t) => {
  const template = [
    '#cloud-config',
    'write_files:',
    '  - path: /etc/k0s/worker.env',
    '    content: |',
    '      CELL={{ cellName }} POOL={{ poolName }} IFACE={{ nodeIPInterface }} GPUS={{ expectedGPUs }}',
    'runcmd:',
    '  - k0s install worker --labels="{{ nodeLabels }}" --token-file /etc/k0s/token',
    ''
  ].join('\n')
  t.equal(
    render(template),
    template
      .replace('{{ cellName }}', 'inference-3')
      .replace('{{ poolName }}', 'inference')
      .replace('{{ nodeIPInterface }}', 'routable')
      .replace('{{ expectedGPUs }}', '1')
      .replace('{{ nodeLabels }}', 'cells.kubeswift.io/pool=inference,gpu=on')
  )
})
