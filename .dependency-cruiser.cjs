/**
 * Layer rules for the production code (STYLE.md §11): no import cycles, every import points down
 * this list (or stays in its own folder), and only contract/ imports generated/ (the other layers
 * reach the generated types and tables through contract/). Folders on one line are peers and do
 * not import each other. Tests, benchmarks and scripts are tools above all layers and are not
 * checked. The web page (web/src) stands apart: see webRules.
 * Checked in `npm test` by test/structure/layers.test.ts, which runs depcruise with this file over
 * the production folders; `npm run deps` runs the same check alone.
 */
const LAYERS = [
  ['cli'],
  ['handlers'],
  ['responses'],
  ['store', 'runtime', 'mcp'],
  ['config'],
  ['dialects'],
  ['engine-cuda', 'checkpoint', 'contract', 'metrics'],
  ['grammar'],
  ['generated'],
];

const layerRules = LAYERS.flatMap((layer, rank) =>
  layer.map((folder) => {
    const allowed = LAYERS.slice(rank + 1).flat();
    return {
      name: `layer-${folder}`,
      comment: `${folder}/ may import only its own folder and the layers below it: ${allowed.join(', ')}`,
      severity: 'error',
      from: { path: `^${folder}/` },
      to: {
        dependencyTypes: ['local'],
        path: '^[^/]+/',
        pathNot: [`^${folder}/`, ...allowed.map((name) => `^${name}/`), '^node_modules/'],
      },
    };
  }),
);

/** The web page (web/src) is a browser bundle beside the layers: it imports only itself and its packages, and no server code imports it (the server serves its built files). */
const webRules = [
  {
    name: 'web-self-contained',
    comment: 'web/ may import only its own files and npm packages',
    severity: 'error',
    from: { path: '^web/' },
    to: { dependencyTypes: ['local'], pathNot: ['^web/', '^node_modules/'] },
  },
  {
    name: 'no-server-imports-web',
    comment: 'the server serves web/dist as files and imports nothing of web/',
    severity: 'error',
    from: { path: `^(${LAYERS.flat().join('|')})/` },
    to: { path: '^web/' },
  },
];

const generatedRule = {
  name: 'generated-through-contract',
  comment: 'only contract/ imports generated/; other folders import its names from contract/ (types.ts, operations.ts)',
  severity: 'error',
  from: { path: '^[^/]+/', pathNot: '^(contract|generated)/' },
  to: { dependencyTypes: ['local'], path: '^generated/' },
};

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    ...layerRules,
    generatedRule,
    ...webRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|scripts|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
