// Type-aware lint: the rules that catch real bugs (promises not awaited or passed where a
// callback's result is ignored, switches that miss a case, dead variables).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A string that starts as a SQL statement (the service writes SQL keywords in capitals). */
const SQL_TEXT = String.raw`/^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+(\s+AS\s+\w+)?\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS)\b/`;
/** EntityManager's query methods. */
const EM_CALLS =
  '/^(find|findOne|findBy|findOneBy|findAndCount|findOneOrFail|exists|count|save|insert|update|upsert|delete|softDelete|increment|decrement|remove)$/';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'clients/typescript/dist/**',
      'coverage/**',
      '.data/**',
      'node_modules/**',
      'bench/results/**',
      'deploy/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // Nest's modules are decorated empty classes; `require` appears where ESM-only packages force it.
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // The house's layering (README, Code map): SQL text and query calls live in repositories only,
    // and in the fragments a module publishes for statements other modules send (<module>-sql.ts).
    files: ['src/**/*.ts'],
    ignores: [
      'src/**/*.repository.ts',
      'src/**/*-sql.ts',
      'src/database/**',
      'src/**/migrations/**',
      'src/**/*.spec.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: `Literal[value=${SQL_TEXT}]`,
          message:
            "SQL text belongs in a repository (<module>.repository.ts), a module's fragments (<module>-sql.ts) or src/database/.",
        },
        {
          selector: `TemplateLiteral[quasis.0.value.raw=${SQL_TEXT}]`,
          message:
            "SQL text belongs in a repository (<module>.repository.ts), a module's fragments (<module>-sql.ts) or src/database/.",
        },
        {
          selector: 'CallExpression[callee.property.name=/^(query|createQueryBuilder|getRepository)$/]',
          message: 'Queries run in repositories (<module>.repository.ts): call one from here.',
        },
        {
          selector: `CallExpression[callee.object.name=/^(em|manager|entityManager)$/][callee.property.name=${EM_CALLS}]`,
          message: 'EntityManager queries run in repositories (<module>.repository.ts): pass `em` to one.',
        },
        {
          selector: `CallExpression[callee.object.property.name=/^(manager|dataSource)$/][callee.property.name=${EM_CALLS}]`,
          message: 'EntityManager queries run in repositories (<module>.repository.ts): call one from here.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@nestjs/typeorm',
              importNames: ['InjectRepository'],
              message: 'TypeORM repositories are used inside <module>.repository.ts only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        module: 'writable',
        require: 'readonly',
        __dirname: 'readonly',
        URL: 'readonly',
      },
    },
  },
);
