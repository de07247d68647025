import t from 'tap'
import {
  BOOTSTRAP_TOKENS,
  bootstrapValues,
  nodeLabelsToken,
  nodeTaintsToken,
  renderBootstrap,
  type BootstrapValues
} from '../../hooks/cellpool/build/bootstrap.ts'
import { MAX_BOOTSTRAP_BYTES, MAX_TEMPLATE_TOKENS } from '../../hooks/cellpool/model/limits.ts'
import { resolvePool } from '../../hooks/cellpool/request/resolve.ts'

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

// Bounds (limits.ts): a join template is a tenant's, so what it renders to is bounded before
// anything is built.

t.test('a template that renders past 64 KiB is refused, naming the size, the bound and the token that adds most', async (t) => {
  const labels = 'x'.repeat(1000)
  // 66 repeats of a 1000-byte value: 66000 bytes of labels alone.
  const template = `#cloud-config\n${'--node-labels {{ nodeLabels }}\n'.repeat(66)}`
  const result = renderBootstrap(template, { ...VALUES, nodeLabels: labels })
  t.notOk('text' in result, 'no text')
  t.match(
    'problem' in result ? result.problem : '',
    /^the join template renders to \d+ bytes for cell inference-3, past the bound of 65536 bytes \(64 KiB\) of bootstrap data per cell \(its Secret, and Metacontroller's record of it in an annotation, hold it twice each\); \{\{ nodeLabels \}\} alone adds 66000 bytes \(66 times\)$/
  )
})

t.test('the rendered size is computed exactly: a template right at the bound renders, one byte more does not', async (t) => {
  const head = '#cloud-config\n{{ nodeLabels }} {{ cellName }}\n'
  const fixed =
    Buffer.byteLength(head) - '{{ nodeLabels }}'.length - '{{ cellName }}'.length + VALUES.nodeLabels.length + VALUES.cellName.length
  const fill = '#'.repeat(MAX_BOOTSTRAP_BYTES - fixed)
  const atBound = renderBootstrap(head + fill, VALUES)
  t.ok('text' in atBound, 'exactly 64 KiB renders')
  t.equal('text' in atBound ? Buffer.byteLength(atBound.text) : 0, MAX_BOOTSTRAP_BYTES, 'and is exactly 64 KiB')
  const over = renderBootstrap(`${head}${fill}é`, VALUES)
  t.match('problem' in over ? over.problem : '', /renders to 65538 bytes/, 'a two-byte character past it is counted in bytes')
})

t.test('a template with more than 256 tokens is refused before anything is built', async (t) => {
  const ok = renderBootstrap('{{ nodeLabels }}'.repeat(MAX_TEMPLATE_TOKENS), VALUES)
  t.ok('text' in ok, '256 tokens render')
  const tooMany = renderBootstrap(`{{ nodeLabels }}${' {{ cellIndex }}'.repeat(MAX_TEMPLATE_TOKENS)}`, VALUES)
  t.equal(
    'problem' in tooMany ? tooMany.problem : '',
    'the join template has more than 256 tokens ({{ name }}); a join template needs a few'
  )
  const unknown = renderBootstrap(`{{ nodeLabels }}${'{{ nope }}'.repeat(1000)}`, VALUES)
  t.match('problem' in unknown ? unknown.problem : '', /more than 256 tokens/, 'unknown names count as tokens too')
})

t.test('the amplification of the report: a 1 MiB template of {{ nodeLabels }} costs nothing to refuse', async (t) => {
  // 20 long labels and a template of nothing but the token: 1 MiB of it would render to gigabytes.
  const labels = Array.from({ length: 20 }, (_, i) => `example.com/label-${i}=${'v'.repeat(63)}`).join(',')
  const template = '{{nodeLabels}}'.repeat(Math.floor((1024 * 1024) / 14))
  const before = process.memoryUsage().heapUsed
  const result = renderBootstrap(template, { ...VALUES, nodeLabels: labels })
  const grown = process.memoryUsage().heapUsed - before
  t.match('problem' in result ? result.problem : '', /more than 256 tokens/)
  t.ok(grown < 64 * 1024 * 1024, `the heap grew by ${Math.round(grown / 1024 / 1024)} MiB, not by the gigabytes a rendering would take`)
})

t.test('a value with a control character is refused, whatever the spec checks let through', async (t) => {
  for (const [token, value] of [
    ['nodeIPInterface', 'eth0\nruncmd: [reboot]'],
    ['nodeLabels', 'gpu=on\r'],
    ['nodeTaints', 'a:NoSchedule\u0000'],
    ['poolName', 'pool\u0085']
  ] as const) {
    const result = renderBootstrap(`{{ nodeLabels }} {{ ${token} }}`, { ...VALUES, [token]: value })
    t.equal(
      'problem' in result ? result.problem : '',
      `the value of {{ ${token} }} for cell inference-3 holds a control character; it cannot go into a boot script`,
      token
    )
  }
  t.ok('text' in renderBootstrap('{{ nodeLabels }}', { ...VALUES, nodeIPInterface: 'eth0\n' }), 'a value no token asks for is not read')
})
