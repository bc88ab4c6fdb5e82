// The documents whose shell blocks test/docs/shell-blocks.int.test.ts runs, as a user would.
export const REPO = new URL('../../', import.meta.url);
export const DOCUMENTS = ['README.md', 'docs/cli.md'] as const;
