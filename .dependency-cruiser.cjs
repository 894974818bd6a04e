/**
 * Layer rules for the production code (STYLE.md §11), checked by `npm run deps` inside `npm test`:
 * no import cycles, and every import points down this list (or stays in its own folder). Folders
 * on one line are peers and do not import each other. Tests, benchmarks and scripts are tools
 * above all layers and are not checked.
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

module.exports = {
  forbidden: [{ name: 'no-circular', severity: 'error', from: {}, to: { circular: true } }, ...layerRules],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|scripts|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
