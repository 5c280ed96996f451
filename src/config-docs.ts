// docs/operations.md's configuration tables, generated from the schema (config.ts): one table per
// section, every variable with its default, the values it takes and its description. Written by
// `npm run docs:config` between the markers below; test/app/config-docs.test.ts fails when the
// file differs.
import type { TObject, TSchema } from '@sinclair/typebox'
import { ConfigSections } from './config.js'

export const BEGIN = '<!-- config:begin -->'
export const END = '<!-- config:end -->'

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
const code = (value: unknown): string => `\`${String(value)}\``

function allowed (schema: TSchema): string {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as TSchema[]).map((s) => code(s.const)).join(', ')
  const range = (kind: string): string => {
    const { minimum: min, maximum: max } = schema as { minimum?: number, maximum?: number }
    if (min !== undefined && max !== undefined) return `${kind}, ${min}–${max}`
    if (min !== undefined) return `${kind} ≥ ${min}`
    return kind
  }
  switch (schema.type) {
    case 'integer': return range('integer')
    case 'number': return range('number')
    case 'boolean': return '`true`, `false`'
    case 'string': {
      if (schema.pattern !== undefined) return `text matching ${code(schema.pattern)}`
      return (schema.minLength ?? 0) > 1 ? `text, ≥ ${schema.minLength} characters` : 'text'
    }
    default: return ''
  }
}

function table (section: TObject): string {
  const rows = Object.entries(section.properties).map(([name, schema]) =>
    `| \`${name}\` | ${schema.default === undefined ? 'unset' : cell(code(schema.default))} | ${cell(allowed(schema))} | ${cell(schema.description ?? '')} |`)
  return [`### ${section.title}`, '', section.description, '', '| variable | default | values | meaning |', '|---|---|---|---|', ...rows].join('\n')
}

/** The Markdown that goes between BEGIN and END. */
export function configDocs (): string {
  return Object.values(ConfigSections).map(table).join('\n\n')
}

/** `document` with what stands between the markers replaced by configDocs(). */
export function withConfigDocs (document: string): string {
  const begin = document.indexOf(BEGIN)
  const end = document.indexOf(END)
  if (begin < 0 || end < begin) throw new Error(`the document has no ${BEGIN} … ${END} section`)
  return `${document.slice(0, begin + BEGIN.length)}\n${configDocs()}\n${document.slice(end)}`
}
