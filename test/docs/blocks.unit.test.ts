import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { blockScript, DocBlockError, extractBlocks, parseMarker, untaggedBlocks, withPlatformStandIn } from './blocks.ts';
import { DOCUMENTS, REPO } from './documents.ts';

const md = (...lines: string[]) => lines.join('\n') + '\n';

describe('doc blocks: the fenced blocks of a document as the doc-block test runs them', () => {
  it('finds shell, file and other blocks with their language and line', () => {
    const blocks = extractBlocks(
      md('# T', '', '```sh', 'echo one', '```', '', '```js', '// hello.js', 'export default () => 1;', '```', '', '```text', 'output', '```', '', '```yaml', 'a: 1', '```'),
      'T.md',
    );
    expect(blocks.map((b) => [b.line, b.lang, b.kind, b.fileName])).to.deep.equal([
      [3, 'sh', 'shell', undefined],
      [7, 'js', 'file', 'hello.js'],
      [12, 'text', 'other', undefined],
      [16, 'yaml', 'other', undefined],
    ]);
    expect(blocks[0]!.text).to.equal('echo one\n');
    expect(blocks[1]!.text).to.equal('// hello.js\nexport default () => 1;\n');
  });

  it('a js block without a file-name comment is not a file', () => {
    const [block] = extractBlocks(md('```js', 'const a = 1;', '```'), 'T.md');
    expect(block!.kind).to.equal('other');
  });

  it('keeps a heredoc and a longer fence whole, and strips a list item’s indentation', () => {
    const blocks = extractBlocks(md('````sh', 'cat > a.md <<EOF', '```', 'EOF', '````', '- item', '', '  ```bash', '  ls', '  ```'), 'T.md');
    expect(blocks.map((b) => b.text)).to.deep.equal(['cat > a.md <<EOF\n```\nEOF\n', 'ls\n']);
  });

  it('a skip marker with a reason skips the next block, blank lines between allowed', () => {
    const blocks = extractBlocks(md('<!-- doc-test: skip reason="needs a Kubernetes cluster" -->', '', '```sh', 'kubectl get fn', '```', '```sh', 'ls', '```'), 'T.md');
    expect(blocks.map((b) => b.skip)).to.deep.equal(['needs a Kubernetes cluster', undefined]);
  });

  it('refuses a skip without a reason, an unknown directive or attribute, naming the document and line', () => {
    const refused = (text: string) => {
      try {
        extractBlocks(text, 'DOC.md');
      } catch (err) {
        expect(err).to.be.instanceOf(DocBlockError);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused(md('x', '<!-- doc-test: skip -->', '```sh', 'ls', '```'))).to.equal('DOC.md:2: a doc-test skip needs a reason: <!-- doc-test: skip reason="why this block cannot run in the test" -->');
    expect(refused(md('<!-- doc-test: skip reason="  " -->', '```sh', 'ls', '```'))).to.match(/^DOC\.md:1: a doc-test skip needs a reason/);
    expect(refused(md('<!-- doc-test: run -->', '```sh', 'ls', '```'))).to.equal('DOC.md:1: unknown doc-test directive "run" (the one known is skip reason="…")');
    expect(refused(md('<!-- doc-test: skip because="x" -->', '```sh', 'ls', '```'))).to.equal('DOC.md:1: unknown doc-test attribute "because" (skip takes reason="…")');
    expect(refused(md('<!-- doc-test: skip reason=x -->', '```sh', 'ls', '```'))).to.match(/^DOC\.md:1: cannot read the doc-test marker's attributes at "reason=x"/);
    expect(refused(md('<!-- doc-test: skip reason="r" -->', 'prose', '```sh', 'ls', '```'))).to.equal('DOC.md:1: a doc-test marker must come right before a fenced block (only blank lines between)');
    expect(refused(md('text', '<!-- doc-test: skip reason="r" -->'))).to.equal('DOC.md:2: a doc-test marker is not followed by a fenced block');
    expect(refused(md('```sh', 'ls'))).to.equal('DOC.md:1: the fenced block opened here (```) is never closed');
  });

  it('parseMarker reads the reason', () => {
    expect(parseMarker(' skip reason="builds the CLI package" ', 'D', 1)).to.deep.equal({ directive: 'skip', reason: 'builds the CLI package' });
  });

  it('a console block runs its $ lines (with continuations) and drops the output', () => {
    const [block] = extractBlocks(md('```console', '$ fnhost function:list', 'Name  ID', 'hello 1', '$ curl -s \\', '  http://x/', '{"a":1}', '```'), 'T.md');
    expect(blockScript(block!)).to.equal('fnhost function:list\ncurl -s \\\n  http://x/\n');
  });

  it('an sh block runs as written', () => {
    const [block] = extractBlocks(md('```sh', 'a=1 # $ not a prompt', 'echo $a', '```'), 'T.md');
    expect(blockScript(block!)).to.equal('a=1 # $ not a prompt\necho $a\n');
  });

  it('make start lines give way to the test gateway, whose addresses replace 8080 and 8081', () => {
    const script = 'make start   # leave it running\nexport FNHOST_URL=http://127.0.0.1:8080\nopen http://127.0.0.1:8081/admin/\nmake test\n';
    expect(withPlatformStandIn(script, { url: 'http://127.0.0.1:40001', adminUrl: 'http://127.0.0.1:40002' })).to.equal(
      ": # make start: the test's own gateway runs instead (http://127.0.0.1:40001)\nexport FNHOST_URL=http://127.0.0.1:40001\nopen http://127.0.0.1:40002/admin/\nmake test\n",
    );
  });

  it('untaggedBlocks names the fences without a language', () => {
    const blocks = extractBlocks(md('```', 'npm install', '```', '```sh', 'ls', '```'), 'T.md');
    expect(untaggedBlocks(blocks).map((b) => b.line)).to.deep.equal([1]);
  });

  for (const doc of DOCUMENTS) {
    it(`${doc}: every fence names its language and every marker has a reason`, () => {
      const blocks = extractBlocks(readFileSync(new URL(doc, REPO), 'utf8'), doc);
      expect(
        untaggedBlocks(blocks).map((b) => `${doc}:${b.line}`),
        'fences without a language (sh for commands a user runs, text for output)',
      ).to.deep.equal([]);
      expect(blocks.filter((b) => b.kind === 'shell').length).to.be.greaterThan(0);
    });
  }
});
