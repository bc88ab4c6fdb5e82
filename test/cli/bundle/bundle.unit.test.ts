import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { MAX_CODE_REF_BYTES } from '../../../core/src/limits.ts';
import { bundleHandler, projectDirOf } from '../../../cli/src/bundle/bundle.ts';
import { nativeAddonSign, packageOf } from '../../../cli/src/bundle/native-addons.ts';
import { BundleError } from '../../../cli/src/errors.ts';

// The bundler on small projects written to a temporary folder (packages hand-made in
// node_modules: no registry). The real-package cases are test/cli/bundle.int.test.ts.

describe('cli: bundling a handler', () => {
  let dir: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const failure = async (file: string): Promise<BundleError> => {
    try {
      await bundleHandler(join(dir, file), dir);
    } catch (err) {
      expect(err).to.be.instanceOf(BundleError);
      return err as BundleError;
    }
    throw new Error(`${file} bundled`);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-bundle-unit-'));
    write('package.json', '{ "name": "app", "private": true, "type": "module" }');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the project from the nearest package.json, else the file\'s folder', () => {
    write('src/deep/handler.ts', 'export default () => {}');
    expect(projectDirOf(join(dir, 'src', 'deep', 'handler.ts'))).to.equal(dir);
    expect(packageOf(join(dir, 'src', 'deep', 'handler.ts'))).to.deep.equal({ name: 'app', dir });
  });

  it('names a package by its manifest, past a nameless {"type": "module"} one inside it', () => {
    write('node_modules/@scope/lib/package.json', '{ "name": "@scope/lib" }');
    write('node_modules/@scope/lib/esm/package.json', '{ "type": "module" }');
    write('node_modules/@scope/lib/esm/index.js', '');
    expect(packageOf(join(dir, 'node_modules', '@scope', 'lib', 'esm', 'index.js'))).to.deep.equal({ name: '@scope/lib', dir: join(dir, 'node_modules', '@scope', 'lib') });
  });

  it('tells a native addon by binding.gyp, gypfile or an addon loader dependency, and nothing else', () => {
    write('node_modules/a/package.json', '{ "name": "a" }');
    write('node_modules/a/binding.gyp', '{}');
    write('node_modules/b/package.json', '{ "name": "b", "gypfile": true }');
    write('node_modules/c/package.json', '{ "name": "c", "dependencies": { "node-gyp-build": "^4" } }');
    write('node_modules/d/package.json', '{ "name": "d", "dependencies": { "ms": "^2" } }');
    expect(nativeAddonSign(join(dir, 'node_modules', 'a'))).to.include('binding.gyp');
    expect(nativeAddonSign(join(dir, 'node_modules', 'b'))).to.include('"gypfile": true');
    expect(nativeAddonSign(join(dir, 'node_modules', 'c'))).to.include('node-gyp-build');
    expect(nativeAddonSign(join(dir, 'node_modules', 'd'))).to.equal(undefined);
  });

  it('refuses a package that imports a compiled .node file, naming the package', async () => {
    write('node_modules/raw-addon/package.json', '{ "name": "raw-addon", "main": "index.js" }');
    write('node_modules/raw-addon/index.js', "module.exports = require('./addon.node');");
    write('handler.js', "import addon from 'raw-addon';\nexport default (req, res) => res.json({ t: typeof addon });\n");
    const err = await failure('handler.js');
    expect(err.message).to.include('package "raw-addon" is a native addon: it imports the compiled file ./addon.node');
    expect(err.message).to.match(/node_modules\/raw-addon\/index\.js:1:\d+: /);
  });

  it('bundles a CommonJS handler that requires a built-in into an ES module exporting it as default', async () => {
    write('handler.cjs', "const { hostname } = require('node:os');\nmodule.exports = (req, res) => res.json({ h: typeof hostname });\n");
    const bundle = await bundleHandler(join(dir, 'handler.cjs'), dir);
    expect(bundle.code).to.match(/\bexport default require_handler\(\)/);
    expect(bundle.code).to.include('//# sourceMappingURL=data:application/json;base64,');
    const map = JSON.parse(Buffer.from(bundle.code.split('base64,')[1]!, 'base64').toString('utf8')) as { sources: string[]; sourcesContent?: unknown };
    expect(map.sources).to.deep.equal(['handler.cjs']);
    expect(map).not.to.have.property('sourcesContent');
  });

  it('refuses a bundle over the code limit (50 MiB), naming its heaviest parts', async function () {
    this.timeout(120_000);
    write('node_modules/huge/package.json', '{ "name": "huge", "main": "index.js" }');
    write('node_modules/huge/index.js', `module.exports = ${JSON.stringify('x'.repeat(MAX_CODE_REF_BYTES))};`);
    write('handler.js', "import huge from 'huge';\nexport default (req, res) => res.send(huge.length);\n");
    const err = await failure('handler.js');
    expect(err.message).to.match(new RegExp(`^the bundle of handler\\.js is \\d+ bytes with its source map; the limit is ${MAX_CODE_REF_BYTES} bytes \\(50 MiB\\)$`));
    expect(err.hint).to.match(/^the heaviest parts: huge \d+ KiB, handler\.js \d+ KiB$/);
  });
});
