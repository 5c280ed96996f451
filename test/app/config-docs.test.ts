// The configuration's one definition (src/config.ts) against what is written about it: every
// variable in exactly one section, with a description; docs/operations.md's tables as the schema
// generates them (npm run docs:config); .env.example naming the same variables. No database.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { ConfigSchema, ConfigSections, loadConfig, sections } from '../../src/config.js'
import { BEGIN, END, configDocs } from '../../src/config-docs.js'

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const variables = Object.keys(ConfigSchema.properties)

t.test('every variable is in exactly one section and has a description', async (t) => {
  const inSections = Object.values(ConfigSections).flatMap((section) => Object.keys(section.properties))
  t.same([...inSections].sort(), [...variables].sort(), 'the sections together are the schema, none named twice')
  for (const [name, section] of Object.entries(ConfigSections)) {
    t.ok(section.title !== undefined && section.description !== undefined, `section ${name} has a title and a description`)
  }
  for (const [name, schema] of Object.entries(ConfigSchema.properties)) {
    t.ok((schema.description ?? '').length > 10, `${name} has a description`)
  }
})

t.test('docs/operations.md holds the tables the schema generates', async (t) => {
  const doc = read('docs/operations.md')
  const begin = doc.indexOf(BEGIN)
  const end = doc.indexOf(END)
  t.ok(begin >= 0 && end > begin, 'the markers are there')
  t.equal(doc.slice(begin + BEGIN.length, end).trim(), configDocs(), 'up to date: run npm run docs:config')
  for (const [name, schema] of Object.entries(ConfigSchema.properties)) {
    const shown = schema.default === undefined ? 'unset' : `\`${String(schema.default)}\``
    t.ok(doc.includes(`| \`${name}\` | ${shown} |`), `${name} is in a table with its default`)
  }
})

t.test('.env.example names every variable of the schema, and no other', async (t) => {
  const named = [...read('.env.example').matchAll(/^#?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1])
  t.same([...new Set(named)].sort(), [...variables].sort())
  t.equal(named.length, new Set(named).size, 'each once')
})

t.test('sections: each holds its own variables alone', async (t) => {
  const config = loadConfig({ DATABASE_URL: 'postgres://db/x', REDIS_URL: 'redis://r:6379' })
  const cut = sections(config)
  t.same(Object.keys(cut), Object.keys(ConfigSections))
  for (const [name, section] of Object.entries(cut)) {
    t.ok(Object.isFrozen(section), `${name} is frozen`)
    for (const [key, value] of Object.entries(section)) t.equal(value, config[key as keyof typeof config], `${name}.${key}`)
  }
  t.same(cut.limits, Object.fromEntries(Object.keys(ConfigSections.limits.properties).map((k) => [k, config[k as keyof typeof config]])))
  t.equal(cut.database.DATABASE_URL, 'postgres://db/x')
  t.notOk('RATE_LIMIT_MAX' in cut.database, 'nothing of another section')
})

t.test('a variable the schema does not name (NODE_ENV, set by the Dockerfile) is ignored', async (t) => {
  const config = loadConfig({ NODE_ENV: 'anything', PATH: '/usr/bin' })
  t.notOk('NODE_ENV' in config)
  t.notOk('PATH' in config)
})
