/**
 * Every document the code cites is in the repository (docs/style.md rule 17): a path ending in
 * `.md` named in `hooks/` or `tests/` exists, and what the citation names inside it (a quoted
 * section or phrase, a numbered rule or step, a numbered section) is there too.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** A path ending in `.md` that is not part of a longer name (`forge.md.sha256` is code, not a citation). */
const REFERENCE = /(?<![\w./-])((?:[\w-]+\/)*[\w-]+\.md)(?![\w.])/g
/** What may follow a citation and names a place inside the document. */
const QUOTED = /^,? "([^"]+)"/
const NUMBERED = /^,? (?:rules?|steps?) (\d+)/
const SECTION = /^,? (?:§ ?|section )(\d+)/

interface Citation {
  file: string
  line: number
  path: string
  rest: string
}

function sourceFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', 'hooks', 'tests'], {
    cwd: ROOT,
    encoding: 'utf8'
  })
  return listed
    .split('\n')
    .filter((f) => f.endsWith('.ts') && existsSync(join(ROOT, f)))
    .sort()
}

function citationsIn(file: string, text: string): Citation[] {
  const found: Citation[] = []
  text.split('\n').forEach((line, i) => {
    for (const match of line.matchAll(REFERENCE)) {
      const path = match[1] ?? ''
      found.push({ file, line: i + 1, path, rest: line.slice((match.index ?? 0) + match[0].length) })
    }
  })
  return found
}

/** The repository path a citation names, or undefined when it names none. */
function resolve(citation: Citation): string | undefined {
  if (existsSync(join(ROOT, citation.path))) return citation.path
  return undefined
}

/** Why what the citation names inside the document is not there, or undefined. */
function placeProblem(citation: Citation, document: string): string | undefined {
  const quoted = QUOTED.exec(citation.rest)?.[1]
  if (quoted !== undefined && !document.toLowerCase().includes(quoted.toLowerCase())) return `"${quoted}" is not in it`
  const numbered = NUMBERED.exec(citation.rest)?.[1]
  if (numbered !== undefined && !new RegExp(`^${numbered}\\. `, 'm').test(document)) return `it has no item ${numbered}`
  const section = SECTION.exec(citation.rest)?.[1]
  if (section !== undefined && !new RegExp(`^#+ ${section}\\. `, 'm').test(document)) return `it has no section ${section}`
  return undefined
}

const files = sourceFiles()
const citations = files.flatMap((file) => citationsIn(file, readFileSync(join(ROOT, file), 'utf8')))

t.test('the scan reads the code and finds its citations', async (t) => {
  t.ok(files.includes('hooks/main.ts'), 'hooks/ is read')
  t.ok(files.includes('tests/unit/citations.test.ts'), 'tests/ is read')
  t.ok(citations.length > 50, `${citations.length} citations found`)
})

t.test('the citation pattern takes paths and leaves code alone', async (t) => {
  const found = (line: string): string[] => citationsIn('x.ts', line).map((c) => c.path)
  t.same(found(' * (docs/instance.md, "The Pod") and README.md'), ['docs/instance.md', 'README.md'])
  t.same(found('cert.sign(key, forge.md.sha256.create())'), [])
  t.same(placeProblem({ file: 'x.ts', line: 1, path: 'a', rest: ', "The Pod")' }, '## The Pod\n'), undefined)
  t.equal(placeProblem({ file: 'x.ts', line: 1, path: 'a', rest: ' rule 3' }, '1. one\n2. two\n'), 'it has no item 3')
  t.equal(placeProblem({ file: 'x.ts', line: 1, path: 'a', rest: ' §2' }, '## 1. One\n'), 'it has no section 2')
})

t.test('every cited document, and the place cited in it, is in the repository', async (t) => {
  const problems: string[] = []
  for (const citation of citations) {
    const where = `${citation.file}:${citation.line}: ${citation.path}`
    const path = resolve(citation)
    if (path === undefined) {
      problems.push(`${where} is not a file of the repository`)
      continue
    }
    const problem = placeProblem(citation, readFileSync(join(ROOT, path), 'utf8'))
    if (problem !== undefined) problems.push(`${where}: ${problem}`)
  }
  t.same(problems, [])
})
