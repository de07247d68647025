/**
 * The content hash of a build context: every file the build would be sent, after its ignore file,
 * by path, executable bit and content. An image tagged with this hash (and the hash of its base
 * and Dockerfile) is rebuilt exactly when something the build can see has changed.
 *
 * The ignore file is read as Docker reads `.dockerignore` (moby's patternmatcher): one pattern a
 * line, `#` comments, `!` re-includes, the last matching pattern wins, and a pattern that matches
 * a directory matches everything under it. Patterns are globs with `*` and `?` (within one path
 * segment) and `**` (any number of segments). Character classes and escapes are refused with the
 * line that uses them, rather than hashed by a guess.
 */
import { createHash } from 'node:crypto'
import { lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'

interface Pattern {
  negated: boolean
  regex: RegExp
  /** The segments before the first one with a wildcard: where a re-include can reach. */
  literal: string[]
}

/** A glob as a regular expression over a whole `/`-separated relative path. */
function globRegex(glob: string): RegExp {
  let source = ''
  const segments = glob.split('/')
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1
    if (segment === '**') {
      // Any number of whole segments, including none.
      source += last ? '.*' : '(?:[^/]+/)*'
      return
    }
    for (const char of segment) {
      if (char === '*') source += '[^/]*'
      else if (char === '?') source += '[^/]'
      else source += char.replace(/[.+^${}()|\\]/g, '\\$&')
    }
    if (!last) source += '/'
  })
  return new RegExp(`^${source}$`)
}

/** The patterns of an ignore file's text; `where` names the file in errors. */
export function parseIgnore(text: string, where: string): Pattern[] {
  const patterns: Pattern[] = []
  text.split('\n').forEach((raw, index) => {
    let line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const negated = line.startsWith('!')
    if (negated) line = line.slice(1).trim()
    if (/[[\]\\]/.test(line)) throw new Error(`${where}:${index + 1}: "${raw}": character classes and escapes are not supported here`)
    // Cleaned as Docker cleans it: no leading "/" or "./", no trailing "/", no empty segments.
    const cleaned = line
      .split('/')
      .filter((s) => s !== '' && s !== '.')
      .join('/')
    if (cleaned === '' || cleaned.split('/').includes('..')) throw new Error(`${where}:${index + 1}: "${raw}" names no path in the context`)
    const segments = cleaned.split('/')
    const firstWild = segments.findIndex((s) => /[*?]/.test(s))
    patterns.push({ negated, regex: globRegex(cleaned), literal: firstWild < 0 ? segments : segments.slice(0, firstWild) })
  })
  return patterns
}

/** Whether `path` (relative, `/`-separated) is left out of the context. */
export function ignored(patterns: Pattern[], path: string): boolean {
  const parents = path.split('/').map((_, i, all) => all.slice(0, i + 1).join('/'))
  let excluded = false
  for (const pattern of patterns) {
    if (parents.some((p) => pattern.regex.test(p))) excluded = !pattern.negated
  }
  return excluded
}

/** Whether a re-include could admit something under the excluded directory `dir`. */
function reachable(patterns: Pattern[], dir: string): boolean {
  const segments = dir.split('/')
  return patterns.some((p) => p.negated && p.literal.every((s, i) => i >= segments.length || s === segments[i]))
}

/** The files of the context under `root`, relative and sorted, after `patterns`. */
export function contextFiles(root: string, patterns: Pattern[]): string[] {
  const files: string[] = []
  const walk = (relative: string): void => {
    const entries = readdirSync(join(root, relative), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`
      const out = ignored(patterns, path)
      if (entry.isDirectory()) {
        if (!out || reachable(patterns, path)) walk(path)
      } else if (!out) {
        files.push(path)
      }
    }
  }
  walk('')
  return files
}

/** sha256 over the context's files: path, type and executable bit, content (a link: its target). */
export function contextHash(root: string, ignoreText: string | undefined, where: string): string {
  const patterns = ignoreText === undefined ? [] : parseIgnore(ignoreText, where)
  const hash = createHash('sha256')
  for (const path of contextFiles(root, patterns)) {
    const full = join(root, path)
    const stat = lstatSync(full)
    const kind = stat.isSymbolicLink() ? 'l' : (stat.mode & 0o111) !== 0 ? 'x' : 'f'
    const content = stat.isSymbolicLink() ? Buffer.from(readlinkSync(full)) : readFileSync(full)
    hash.update(`${path}\0${kind}\0${content.length}\0`).update(content)
  }
  return hash.digest('hex')
}

/** sha256 of the given strings and buffers, each length-prefixed. */
export function hashOf(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(`${Buffer.byteLength(part)}\0`).update(part)
  return hash.digest('hex')
}
