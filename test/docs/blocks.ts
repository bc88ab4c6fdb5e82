// The fenced blocks of a Markdown document, as the doc-block test runs them (test/docs/README.md):
// pure functions, no I/O. A block is shell (sh, bash, shell, zsh: the whole text is a script;
// console: the lines after `$ ` are the commands, the rest is output), a file (a js/ts block whose
// first line is `// <file name>`: the user saves it under that name), or neither (output, YAML...).
// A marker comment right before a block changes how it is run:
//
//   <!-- doc-test: skip reason="needs a Kubernetes cluster" -->
//
// and a skip without a reason is an error, so every block that is not run says why.

export const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell', 'zsh', 'console']);
const FILE_LANGUAGES = new Set(['js', 'mjs', 'cjs', 'javascript', 'ts', 'mts', 'cts', 'typescript']);

export type BlockKind = 'shell' | 'file' | 'other';

export interface DocBlock {
  /** The document's name, as given (for messages: `README.md:97`). */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word, lower case ('' when the fence names none). */
  lang: string;
  kind: BlockKind;
  /** The block's text (without the fences and the fence's indentation), ending with a newline. */
  text: string;
  /** For a file block: the name its first line gives. */
  fileName?: string;
  /** For a skipped block: why it is not run. */
  skip?: string;
}

/** A doc-test marker or fence the runner cannot use; names the document and line. */
export class DocBlockError extends Error {
  readonly doc: string;
  readonly line: number;
  constructor(doc: string, line: number, problem: string) {
    super(`${doc}:${line}: ${problem}`);
    this.name = 'DocBlockError';
    this.doc = doc;
    this.line = line;
  }
}

const FENCE = /^( {0,3}|\s*)(`{3,}|~{3,})\s*([^`\s]*)?.*$/;
const MARKER = /^\s*<!--\s*doc-test:(.*?)-->\s*$/;
const FILE_NAME = /^\/\/\s*([\w./-]+\.(?:js|mjs|cjs|ts|mts|cts))\s*$/;

/** `skip reason="…"` into its directive and attributes; throws on anything else. */
export function parseMarker(body: string, doc: string, line: number): { directive: 'skip'; reason: string } {
  const text = body.trim();
  const m = /^([a-z-]+)\b(.*)$/s.exec(text);
  if (m === null) throw new DocBlockError(doc, line, `a doc-test marker needs a directive (skip reason="…"), got "${text}"`);
  const [, directive, rest] = m;
  if (directive !== 'skip') throw new DocBlockError(doc, line, `unknown doc-test directive "${directive}" (the one known is skip reason="…")`);
  const attrs = new Map<string, string>();
  const attr = /\s*([a-z-]+)="([^"]*)"/gy;
  let consumed = 0;
  for (let a = attr.exec(rest!); a !== null; a = attr.exec(rest!)) {
    attrs.set(a[1]!, a[2]!);
    consumed = attr.lastIndex;
  }
  if (rest!.slice(consumed).trim() !== '') throw new DocBlockError(doc, line, `cannot read the doc-test marker's attributes at "${rest!.slice(consumed).trim()}" (write skip reason="…")`);
  for (const key of attrs.keys()) if (key !== 'reason') throw new DocBlockError(doc, line, `unknown doc-test attribute "${key}" (skip takes reason="…")`);
  const reason = attrs.get('reason')?.trim() ?? '';
  if (reason === '') throw new DocBlockError(doc, line, 'a doc-test skip needs a reason: <!-- doc-test: skip reason="why this block cannot run in the test" -->');
  return { directive: 'skip', reason };
}

/** Every fenced block of `markdown`, in order, with the marker before it applied. */
export function extractBlocks(markdown: string, doc: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  let pending: { line: number; reason: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = MARKER.exec(line);
    if (marker !== null) {
      if (pending !== undefined) throw new DocBlockError(doc, pending.line, 'a doc-test marker is not followed by a fenced block (another marker comes first)');
      pending = { line: i + 1, ...parseMarker(marker[1]!, doc, i + 1) };
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence === null) {
      if (pending !== undefined && line.trim() !== '') throw new DocBlockError(doc, pending.line, 'a doc-test marker must come right before a fenced block (only blank lines between)');
      continue;
    }
    const indent = fence[1]!.length;
    const open = fence[2]!;
    const lang = (fence[3] ?? '').toLowerCase();
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[j]!);
      if (close !== null && close[1]![0] === open[0] && close[1]!.length >= open.length) break;
      body.push(lines[j]!.slice(Math.min(indent, lines[j]!.length - lines[j]!.trimStart().length)));
    }
    if (j === lines.length) throw new DocBlockError(doc, i + 1, `the fenced block opened here (${open}) is never closed`);
    const text = body.join('\n') + '\n';
    const block: DocBlock = { doc, line: i + 1, lang, kind: 'other', text };
    if (SHELL_LANGUAGES.has(lang)) block.kind = 'shell';
    else if (FILE_LANGUAGES.has(lang)) {
      const name = FILE_NAME.exec(body[0] ?? '');
      if (name !== null) {
        block.kind = 'file';
        block.fileName = name[1]!;
      }
    }
    if (pending !== undefined) {
      block.skip = pending.reason;
      pending = undefined;
    }
    blocks.push(block);
    i = j;
  }
  if (pending !== undefined) throw new DocBlockError(doc, pending.line, 'a doc-test marker is not followed by a fenced block');
  return blocks;
}

/** Blocks whose fence names no language: in the documents the test runs, each must (so no shell block hides as plain text). */
export function untaggedBlocks(blocks: DocBlock[]): DocBlock[] {
  return blocks.filter((b) => b.lang === '');
}

/**
 * The script a shell block runs: the text of sh/bash/shell/zsh blocks as it is; for console
 * blocks the commands after `$ ` (with their `\` continuation lines), output lines dropped.
 */
export function blockScript(block: DocBlock): string {
  if (block.lang !== 'console') return block.text;
  const out: string[] = [];
  let continuing = false;
  for (const line of block.text.split('\n')) {
    if (continuing) {
      out.push(line);
      continuing = line.endsWith('\\');
    } else if (line.startsWith('$ ')) {
      out.push(line.slice(2));
      continuing = line.endsWith('\\');
    }
  }
  return out.join('\n') + '\n';
}

export interface PlatformStandIn {
  /** The test gateway's main URL, read where the document writes http://127.0.0.1:8080. */
  url: string;
  /** Its admin listener, read where the document writes http://127.0.0.1:8081. */
  adminUrl: string;
}

/**
 * What the runner changes in a script, and only this: a `make start` command line is not run (the
 * test has started its own gateway: `make start` would hold port 8080, which another platform on
 * the machine may hold, and never return), and the addresses `make start` serves are read as the
 * test gateway's. Everything else runs as written.
 */
export function withPlatformStandIn(script: string, platform: PlatformStandIn): string {
  return script
    .split('\n')
    .map((line) => (/^\s*make\s+start(\s|$)/.test(line) ? `: # make start: the test's own gateway runs instead (${platform.url})` : line))
    .join('\n')
    .replaceAll('http://127.0.0.1:8080', platform.url)
    .replaceAll('http://127.0.0.1:8081', platform.adminUrl);
}
