import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/rxe/**', 'node_modules/**'],
    pool: 'forks',
    testTimeout: 20000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
