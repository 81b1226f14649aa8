/**
 * The layers of the service, checked by `npm run lint` (dependency-cruiser). A module is a folder
 * directly under src/; the shared parts are common/, config/, database/ and http/ (the adapter).
 */
const FEATURES =
  '^src/(auth|codes|customers|demo|entitlements|events|health|idempotency|info|metrics|plans|projects|public|rate-limit|redemptions|subscriptions)/';

module.exports = {
  forbidden: [
    {
      name: 'no-module-cycles',
      comment: 'Modules (folders) depend on each other in one direction only.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-file-cycles',
      comment:
        'No file imports itself through others (entities excepted: TypeORM relations name each other lazily).',
      severity: 'error',
      from: { path: '^src/', pathNot: '\\.entity\\.ts$' },
      to: { circular: true },
    },
    {
      name: 'chain-is-pure',
      comment: 'The chain engine is plain rules: nothing from Nest, TypeORM or any feature module.',
      severity: 'error',
      from: { path: '^src/subscriptions/chain/' },
      to: {
        path: ['^node_modules/(@nestjs|typeorm|class-validator|class-transformer)/', FEATURES],
        pathNot: '^src/subscriptions/chain/',
      },
    },
    {
      name: 'entitlement-engine-is-pure',
      comment: 'The entitlement rules (periods, runs, order, allocation) are plain rules too.',
      severity: 'error',
      from: { path: '^src/entitlements/engine/' },
      to: {
        path: ['^node_modules/(@nestjs|typeorm|class-validator|class-transformer)/', FEATURES],
        pathNot: '^src/entitlements/engine/',
      },
    },
    {
      name: 'shared-imports-no-feature',
      comment: 'common/, config/, database/ and http/ serve the features and know none of them.',
      severity: 'error',
      from: { path: '^src/(common|config|database|http)/', pathNot: '^src/database/migrations/' },
      to: { path: FEATURES },
    },
    {
      name: 'controllers-import-no-repository',
      comment: 'Controllers call services; data access stays behind them.',
      severity: 'error',
      from: { path: '\\.controller\\.ts$' },
      to: { path: '\\.repository\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.spec\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
