/**
 * Layer rules for the production code (STYLE.md §11), checked by `npm run deps` inside `npm test`:
 * no import cycles, and every import points down this list (or stays in its own folder). Folders
 * on one line are peers and do not import each other. Tests, benchmarks and scripts are tools
 * above all layers and are not checked. The web page (web/src) stands apart: see webRules.
 */
const LAYERS = [
  ['cli'],
  ['handlers'],
  ['responses'],
  ['store', 'runtime'],
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

module.exports = {
  forbidden: [{ name: 'no-circular', severity: 'error', from: {}, to: { circular: true } }, ...layerRules, ...webRules],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|scripts|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
