/**
 * The shape of `hooks/` (docs/style.md rules 11, 14, 18 and 21), read from the source as the
 * TypeScript compiler reads it, so that it cannot come back unnoticed:
 *
 * - no import cycle, type imports included: a cycle means a type lives in the wrong room;
 * - no file over 350 lines outside `hooks/api/` (the declarative schemas);
 * - no controller importing another (nor the workload agent a controller, nor one it);
 * - no re-export: a name has one home, and every importer names it.
 *
 * - a `model/` folder (the floor of the cell pool and of the workload agent) imports nothing of its
 *   own controller outside itself: only other model files and the shared floors below every
 *   controller, `hooks/api/`, `hooks/k8s/` and `hooks/metacontroller/`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const HOOKS = join(ROOT, 'hooks')
const MAX_LINES = 350

/** Folders whose files may not import one another's: the controllers and the workload agent. */
const APART = ['hooks/instance/', 'hooks/isolation/', 'hooks/cellpool/', 'hooks/agent/']

/** Every .ts file under `dir`, as a path relative to the repository. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) return sourceFiles(path)
      return name.endsWith('.ts') ? [relative(ROOT, path)] : []
    })
}

interface Parsed {
  file: string
  lines: number
  /** Every relative module this file imports or re-exports, type-only ones included, resolved. */
  imports: string[]
  /** Where the file re-exports: `export ... from`, or `export { name }` of an imported name. */
  reExports: string[]
}

function parse(file: string): Parsed {
  return parseText(file, readFileSync(join(ROOT, file), 'utf8'))
}

/** What `text`, the source of `file`, imports and re-exports. */
function parseText(file: string, text: string): Parsed {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS)
  const imports: string[] = []
  const reExports: string[] = []
  const importedNames = new Set<string>()
  const resolve = (specifier: string): string | undefined =>
    specifier.startsWith('.') ? relative(ROOT, join(ROOT, dirname(file), specifier)) : undefined
  const at = (node: ts.Node): string => `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const target = resolve(statement.moduleSpecifier.text)
      if (target !== undefined) imports.push(target)
      const clause = statement.importClause
      if (clause?.name !== undefined) importedNames.add(clause.name.text)
      const bindings = clause?.namedBindings
      if (bindings !== undefined && ts.isNamedImports(bindings)) for (const b of bindings.elements) importedNames.add(b.name.text)
      if (bindings !== undefined && ts.isNamespaceImport(bindings)) importedNames.add(bindings.name.text)
    } else if (ts.isImportEqualsDeclaration(statement) && ts.isExternalModuleReference(statement.moduleReference)) {
      const expression = statement.moduleReference.expression
      const target = ts.isStringLiteral(expression) ? resolve(expression.text) : undefined
      if (target !== undefined) imports.push(target)
    } else if (ts.isExportDeclaration(statement)) {
      if (statement.moduleSpecifier !== undefined && ts.isStringLiteral(statement.moduleSpecifier)) {
        const target = resolve(statement.moduleSpecifier.text)
        if (target !== undefined) imports.push(target)
        reExports.push(`${at(statement)} re-exports from ${statement.moduleSpecifier.text}`)
      } else if (statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) {
          const local = (element.propertyName ?? element.name).text
          if (importedNames.has(local)) reExports.push(`${at(element)} re-exports ${local}`)
        }
      }
    }
  }
  // `import('…')` and `import type` in type positions (`import('./x.ts').T`) count as well.
  const visit = (node: ts.Node): void => {
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      const target = resolve(node.argument.literal.text)
      if (target !== undefined) imports.push(target)
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments
      const target = argument !== undefined && ts.isStringLiteral(argument) ? resolve(argument.text) : undefined
      if (target !== undefined) imports.push(target)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return { file, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0), imports: [...new Set(imports)].sort(), reExports }
}

/** The strongly connected components of more than one file, or of one file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const connect = (file: string): void => {
    index.set(file, counter)
    low.set(file, counter)
    counter += 1
    stack.push(file)
    onStack.add(file)
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue
      if (!index.has(next)) {
        connect(next)
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number))
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file) as number, index.get(next) as number))
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    for (;;) {
      const member = stack.pop() as string
      onStack.delete(member)
      component.push(member)
      if (member === file) break
    }
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
  }
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) connect(file)
  return found.sort((a, b) => (a[0] as string).localeCompare(b[0] as string))
}

/** The floors below every controller, which a model may stand on. */
const SHARED_FLOORS = ['hooks/api/', 'hooks/k8s/', 'hooks/metacontroller/']

/** The imports of a `model/` file that leave the model and the shared floors. */
function modelEscapes(files: readonly Parsed[]): string[] {
  return files.flatMap((p) => {
    const at = p.file.indexOf('/model/')
    if (at < 0) return []
    const floor = p.file.slice(0, at + '/model/'.length)
    return p.imports
      .filter((i) => !i.startsWith(floor) && !SHARED_FLOORS.some((shared) => i.startsWith(shared)))
      .map((i) => `${p.file} → ${i}`)
  })
}

const parsed = sourceFiles(HOOKS).map(parse)
const graph = new Map(parsed.map((p) => [p.file, p.imports]))
const found = cycles(graph)

t.test('the scan reads hooks/ and its imports, type imports included', async (t) => {
  t.ok(parsed.length > 100, `${parsed.length} files read`)
  const routes = parsed.find((p) => p.file === 'hooks/server/routes.ts')
  t.ok(routes?.imports.includes('hooks/controllers.ts'), 'a value import is an edge')
  const descriptor = parsed.find((p) => p.file === 'hooks/metacontroller/descriptor.ts')
  t.ok(descriptor?.imports.includes('hooks/metacontroller/answer-guard.ts'), 'an import type is an edge')
})

t.test('the checks find what they look for', async (t) => {
  t.same(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
        ['d', ['a']],
        ['e', ['e']]
      ])
    ),
    [['a', 'b', 'c'], ['e']]
  )
  const reExporting = parseText(
    'hooks/x/a.ts',
    "import { b } from './b.ts'\nimport type { C } from '../y/c.ts'\nexport { b }\nexport * from './d.ts'\nexport type { E } from './e.ts'\ntype F = import('./f.ts').F\n"
  )
  t.same(reExporting.imports, ['hooks/x/b.ts', 'hooks/x/d.ts', 'hooks/x/e.ts', 'hooks/x/f.ts', 'hooks/y/c.ts'])
  t.same(reExporting.reExports, [
    'hooks/x/a.ts:3 re-exports b',
    'hooks/x/a.ts:4 re-exports from ./d.ts',
    'hooks/x/a.ts:5 re-exports from ./e.ts'
  ])
  t.same(
    modelEscapes([
      {
        file: 'hooks/agent/model/a.ts',
        lines: 1,
        imports: ['hooks/agent/model/b.ts', 'hooks/api/c.ts', 'hooks/agent/nodeset/d.ts'],
        reExports: []
      }
    ]),
    ['hooks/agent/model/a.ts → hooks/agent/nodeset/d.ts']
  )
})

t.test('no import cycle in hooks/, type imports included', async (t) => {
  t.same(found, [])
})

t.test('a model/ folder stands on nothing of its controller but itself', async (t) => {
  const models = parsed.filter((p) => p.file.includes('/model/'))
  t.ok(
    models.some((p) => p.file.startsWith('hooks/agent/model/')) && models.some((p) => p.file.startsWith('hooks/cellpool/model/')),
    'both floors read'
  )
  t.same(modelEscapes(parsed), [])
})

t.test(`no file over ${MAX_LINES} lines outside hooks/api/`, async (t) => {
  t.same(
    parsed.filter((p) => !p.file.startsWith('hooks/api/') && p.lines > MAX_LINES).map((p) => `${p.file}: ${p.lines} lines`),
    []
  )
})

t.test('no controller imports another, nor the workload agent a controller', async (t) => {
  const folderOf = (file: string): string | undefined => APART.find((folder) => file.startsWith(folder))
  const crossings = parsed.flatMap((p) => {
    const from = folderOf(p.file)
    return from === undefined
      ? []
      : p.imports.filter((i) => folderOf(i) !== undefined && folderOf(i) !== from).map((i) => `${p.file} → ${i}`)
  })
  t.same(crossings, [])
})

t.test('no re-export: every name is imported from its one home', async (t) => {
  t.same(
    parsed.flatMap((p) => p.reExports),
    []
  )
})
