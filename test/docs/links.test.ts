// Every relative link in README.md and docs/*.md resolves: its file or directory exists, and its
// #fragment names a heading of the target Markdown file (GitHub's slug: lower case, punctuation
// dropped, spaces to hyphens, -1, -2… for repeats) or an HTML id/name in it. Links inside code
// (fenced blocks, `spans`) are not links; absolute URLs are not checked. No database.
import t from 'tap'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Link and image targets: inline `[text](target "title")` and reference definitions `[ref]: target`. */
function linkTargets (md: string): string[] {
  const text = outsideFences(md).map((line) => line.replace(/(`+)[^`]*?\1/g, '')).join('\n')
  const inline = [...text.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)[^)]*\)/g)].map((m) => m[1] ?? '')
  const defined = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/gm)].map((m) => m[1] ?? '')
  return [...inline, ...defined].map((target) => target.replace(/^<(.*)>$/, '$1'))
}

/** GitHub's anchor for a heading's text. */
function slug (heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link reads as its text
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor a Markdown file offers: its ATX headings' slugs and HTML ids/names. */
function anchors (md: string): Set<string> {
  const seen = new Map<string, number>()
  const found = new Set<string>()
  const lines = outsideFences(md)
  for (const line of lines) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const base = slug(heading)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    found.add(n === 0 ? base : `${base}-${n}`)
  }
  for (const m of lines.join('\n').matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) found.add(m[1] ?? '')
  return found
}

/** The lines outside fenced code blocks (``` or ~~~). */
function outsideFences (md: string): string[] {
  let fence: string | null = null
  const lines: string[] = []
  for (const line of md.split('\n')) {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence !== null) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length) fence = null
    } else if (opener !== undefined) {
      fence = opener
    } else {
      lines.push(line)
    }
  }
  return lines
}

/** The broken relative links of one Markdown file, as "file: target: why". */
function brokenLinks (file: string, root: string): string[] {
  const md = readFileSync(file, 'utf8')
  const name = relative(root, file)
  const problems: string[] = []
  for (const target of linkTargets(md)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue
    const hash = target.indexOf('#')
    const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash))
    const fragment = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1))
    const resolved = path === '' ? file : resolve(dirname(file), path)
    if (!existsSync(resolved)) { problems.push(`${name}: ${target}: no such file`); continue }
    if (fragment === null || fragment === '') continue
    if (!resolved.endsWith('.md')) { problems.push(`${name}: ${target}: an anchor into a file that is not Markdown`); continue }
    if (!anchors(readFileSync(resolved, 'utf8')).has(fragment)) problems.push(`${name}: ${target}: no heading "#${fragment}" in ${relative(root, resolved)}`)
  }
  return problems
}

function documents (root: string): string[] {
  const docs = join(root, 'docs')
  const inDocs = existsSync(docs) ? readdirSync(docs).filter((f) => f.endsWith('.md')).sort().map((f) => join(docs, f)) : []
  return [join(root, 'README.md'), ...inDocs]
}

t.test('the checker finds what it should and nothing else', async (t) => {
  t.equal(slug('OGC API – Features: find your sources again'), 'ogc-api--features-find-your-sources-again')
  t.equal(slug('GET /sources/?id='), 'get-sourcesid')
  t.equal(slug('`make bench` (2026-11-24, 26da126)'), 'make-bench-2026-11-24-26da126')
  t.equal(slug('Several instances, Redis and [PgBouncer](https://www.pgbouncer.org)'), 'several-instances-redis-and-pgbouncer')
  t.equal(slug('snake_case and Ünïcode'), 'snake_case-and-ünïcode')

  const root = t.testdir({
    'README.md': [
      '# Title',
      '[ok](docs/a.md) [ok anchor](docs/a.md#second-part) [ok repeat](docs/a.md#part-1) [self](#title)',
      '[missing file](docs/nope.md) [missing anchor](docs/a.md#nowhere) ![missing image](docs/x.png)',
      '[external](https://example.org/nope.md) [mail](mailto:a@example.org) `[in code](nope.md)`',
      '```md',
      '[in a fence](nope.md)',
      '# not a heading',
      '```',
      '[ref]: docs/gone.md'
    ].join('\n'),
    docs: {
      'a.md': '# Part\n## Second part\n## Part\n<a id="custom"></a>\n[back](../README.md#title) [html](#custom) [dir](../docs)\n',
      'b.md': '```\n## not a heading\n```\n[no](#not-a-heading)\n'
    }
  })
  const problems = documents(root).flatMap((f) => brokenLinks(f, root))
  t.same(problems, [
    'README.md: docs/nope.md: no such file',
    'README.md: docs/a.md#nowhere: no heading "#nowhere" in docs/a.md',
    'README.md: docs/x.png: no such file',
    'README.md: docs/gone.md: no such file',
    'docs/b.md: #not-a-heading: no heading "#not-a-heading" in docs/b.md'
  ])
})

t.test('every relative link in README.md and docs/*.md resolves', async (t) => {
  const files = documents(ROOT)
  t.ok(files.length > 1, 'README.md and the docs/ files are found')
  for (const file of files) {
    t.same(brokenLinks(file, ROOT), [], relative(ROOT, file))
  }
})
