/**
 * The direction of imports (README, Layout): server > http > services > (actors, media) > platform > core.
 * Each layer imports only the layers below it, type-only imports included; the browser code imports only
 * the zod-free modules of core. Run by `npm run deps` (and so by CI); test/layout.test.ts proves it fails
 * on a wrong-way import.
 */
const layers = {
  core: '^src/core/',
  platform: '^src/platform/',
  actors: '^actors/',
  media: '^media/',
  services: '^src/services/',
  http: '^http/',
  server: '^src/server/',
  web: '^web/',
};
/** What each layer may not import (everything of ours above it, and the browser's code). */
const above = {
  core: ['platform', 'actors', 'media', 'services', 'http', 'server', 'web'],
  platform: ['actors', 'media', 'services', 'http', 'server', 'web'],
  actors: ['media', 'services', 'http', 'server', 'web'],
  media: ['actors', 'services', 'http', 'server', 'web'],
  services: ['http', 'server', 'web'],
  http: ['server', 'web'],
  server: ['web'],
};
const either = (names) => `(${names.map((n) => layers[n]).join('|')})`;

module.exports = {
  forbidden: [
    ...Object.entries(above).map(([layer, names]) => ({
      name: `${layer}-imports-up`,
      comment: `${layer} imports only the layers below it (server > http > services > (actors, media) > platform > core)`,
      severity: 'error',
      from: { path: layers[layer] },
      to: { path: either(names) },
    })),
    {
      name: 'web-imports-core-only',
      comment: 'the browser code imports, of the server\'s code, only the zod-free modules of src/core',
      severity: 'error',
      from: { path: layers.web },
      to: { path: either(['platform', 'actors', 'media', 'services', 'http', 'server']) },
    },
    {
      name: 'web-reaches-no-zod',
      comment: 'zod stays out of the browser bundle: nothing web imports, however indirectly, imports zod',
      severity: 'error',
      from: { path: layers.web },
      to: { path: '^node_modules/zod/', reachable: true },
    },
    {
      name: 'no-circular',
      comment: 'no import circles',
      severity: 'error',
      from: { path: '^(src|actors|media|http|web)/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|actors|media|http|web|node_modules/zod)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
};
