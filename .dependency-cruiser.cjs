// The layers of src/, bottom to top, checked by `npm run layers` (dependency-cruiser) in .ci/run.
// A module may import from the layers below its own, never from one above, nor from another
// module of its own layer (a constant two of them need moves down, not sideways). Each entry of
// LAYERS is a folder (`db/`) or a file (`errors.ts`) directly under src/; a module not placed
// here fails too, so a new one has to be given its place.
/** @type {string[][]} */
const LAYERS = [
  ['schemas/', 'connection-string.ts'], // shared schema primitives: ids, date-times, bbox, what an overlap is; libpq's connection strings read
  ['log.ts', 'config.ts'],
  ['config-docs.ts'], // the configuration tables of docs/operations.md, made from config.ts's schema
  ['errors.ts'], // error codes and bodies (their schemas for the document); http/ turns errors into them
  ['db/'],
  ['http/'], // HTTP mechanics and OpenAPI helpers shared by every route: errors, preconditions, security
  ['accounts/', 'sources/'], // domain modules, routes included (app.authenticate is a decorator, not an import)
  ['events/', 'ops/', 'conflicts/'], // ops wraps the sources store, events makes source ids; conflicts reads sources' periods
  ['features/', 'tiles/', 'map/'], // build on sources; app.ts hands each what it needs of another
  ['watches/'], // watched areas: their filters are the items' CQL2 (features/filters/)
  ['plugins/'], // shared handles: auth reads accounts, metrics and replicas are ops'
  ['app.ts', 'bootstrap.ts'],
  ['server.ts', 'cli.ts'],
  ['main.cts']
]

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** The path pattern of a module: everything under a folder, or the one file. */
const pattern = (module) => `^src/${escape(module)}${module.endsWith('/') ? '' : '$'}`
const name = (module) => module.replace(/\/$/, '').replace(/\./g, '-')

const upward = LAYERS.flatMap((layer, i) => layer.map((module) => {
  const above = LAYERS.slice(i + 1).flat()
  const beside = layer.filter((other) => other !== module)
  return {
    name: `layers-${name(module)}`,
    severity: 'error',
    comment: `src/${module} may import only from the layers below it (.dependency-cruiser.cjs).`,
    from: { path: pattern(module) },
    to: { path: [...above, ...beside].map(pattern) }
  }
})).filter((rule) => rule.to.path.length > 0)

const placed = LAYERS.flat().map(pattern)

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other, directly or through others.',
      from: {},
      to: { circular: true }
    },
    {
      name: 'routes-from-app-only',
      severity: 'error',
      comment: 'A route module is registered by app.ts; what another module needs of it belongs in a lower module.',
      from: { path: '^src/', pathNot: '^src/app\\.ts$' },
      to: { path: '\\.routes\\.ts$' }
    },
    {
      name: 'layers-unplaced',
      severity: 'error',
      comment: 'A module of src/ that is in no layer: give it its place in LAYERS (.dependency-cruiser.cjs).',
      from: { path: '^src/', pathNot: placed },
      to: {}
    },
    {
      name: 'layers-unplaced-target',
      severity: 'error',
      comment: 'A module of src/ that is in no layer: give it its place in LAYERS (.dependency-cruiser.cjs).',
      from: {},
      to: { path: '^src/', pathNot: placed }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/map/public/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types']
    },
    reporterOptions: { text: { highlightFocused: true } }
  }
}
