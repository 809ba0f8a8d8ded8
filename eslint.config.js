// ESLint (flat config): @eslint/js and typescript-eslint recommended, plus the project's own rules.
// Layout is prettier's (`npm run format:check`, printWidth 120); the one layout rule here is max-len
// for comments, which prettier never wraps.
//
// No type-aware rules (typescript-eslint's recommendedTypeChecked): they take `npx eslint .` from
// about 25 s to well over a minute on a 2-core machine.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

/** What the bench scripts (plain Node ESM, not type-checked) use from Node's global scope. */
const NODE_GLOBALS = Object.fromEntries(
  [
    "AbortController",
    "AbortSignal",
    "Buffer",
    "URL",
    "clearInterval",
    "clearTimeout",
    "console",
    "fetch",
    "performance",
    "process",
    "setInterval",
    "setTimeout",
    "structuredClone",
  ].map((name) => [name, "readonly"]),
);

export default defineConfig(
  {
    ignores: [
      "dist/",
      "bundle/",
      "node_modules/",
      ".triton-dev/",
      // Generated protobuf code (buf generate).
      "src/**/gen/",
      // Test inputs, and the programs that stand in for kind, kubectl and the Docker test image.
      "test/fixtures/",
      "bench/results/",
      "bench/gpu/results/",
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: NODE_GLOBALS },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // Comments only: code lines are prettier's to wrap, and the ones it leaves long are ones it cannot break.
      "max-len": [
        "error",
        {
          code: Number.MAX_SAFE_INTEGER,
          comments: 120,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreUrls: true,
          ignoreRegExpLiterals: true,
        },
      ],
      // A terminal tool: its regexes match control characters (key input, ANSI escapes) on purpose.
      "no-control-regex": "off",
      // `interface A extends B {}` names a type; an empty `{}` type on its own is still reported.
      "@typescript-eslint/no-empty-object-type": ["error", { allowInterfaces: "with-single-extends" }],
      // A leading underscore marks a parameter or binding that is unused on purpose (e.g. an override's).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" },
      ],
    },
  },
  {
    files: ["src/**"],
    rules: {
      // The tool logs through src/log/logger.ts and prints through src/cli/output.ts (the Output a
      // command is handed, which tests capture); console.* or a direct stream write would bypass both.
      "no-console": "error",
      "no-restricted-syntax": [
        "error",
        {
          selector:
            "CallExpression[callee.property.name='write'][callee.object.object.name='process'][callee.object.property.name=/^std(out|err)$/]",
          message: "Print through the command's Output (src/cli/output.ts) or log through src/log/logger.ts.",
        },
      ],
    },
  },
  {
    // The two legitimate writers to the process's own streams: the logger's default sink (stderr),
    // and processOutput, the Output of the real command line.
    files: ["src/log/logger.ts", "src/cli/output.ts"],
    rules: { "no-restricted-syntax": "off" },
  },
  {
    // The VS Code extension (editors/vscode) is CommonJS, as VS Code loads extensions.
    files: ["editors/vscode/**/*.js"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "writable" } },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["test/**"],
    rules: {
      // Tests walk parsed YAML and JSON (manifests, API answers) as loosely typed objects on purpose.
      "@typescript-eslint/no-explicit-any": "off",
      // Screen assertions spell out the spaces the dashboard renders ("  offset" is an unselected row).
      "no-regex-spaces": "off",
    },
  },
);
