/** Two tiers: pure unit tests next to the code, HTTP tests on a real PostgreSQL under test/. */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true, diagnostics: false }];
module.exports = {
  // HTTP tests boot the app and a database per file: hooks and tests may take longer than 5 s.
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      // scripts/: the checks that `npm run lint` and CI run (tried on small trees of their own)
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
  ],
};
