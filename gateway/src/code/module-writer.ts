import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile, open } from 'node:fs/promises';
import { join } from 'node:path';
import { CodeMissingError, type CodeStore, type FunctionRecord } from '@fnhost/core';
import { moduleExtension } from '../executor/module-file.ts';

// A function's code written as its runtime's module file (one machine). Inline code is written
// as it is; code by reference is copied from the code store into the same place, a chunk at a
// time (never whole in the gateway's memory), so the runtime reads a file in its own folder, as
// for inline code, and needs no network path or token to fetch it: the gateway does the
// reading, checked against the function's namespace. The extension (.mjs or .js: module-file.ts)
// is decided on the bytes as they pass.

/** ES module syntax where a statement starts, as moduleExtension tests it. */
const MODULE_STATEMENT = /(?:^|[;}])\s*(?:import\s*[\w{*'"]|export[\s{*])/m;
/** Bytes of one chunk kept to test with the next, so a statement split across two is seen. */
const OVERLAP = 256;

/** Whether module syntax shows anywhere in the chunks seen so far (moduleExtension over a stream). */
export class ModuleSniffer {
  #tail = '';
  #module = false;
  push(chunk: Uint8Array): void {
    if (this.#module) return;
    const text = this.#tail + Buffer.from(chunk).toString('latin1');
    if (MODULE_STATEMENT.test(text)) this.#module = true;
    this.#tail = text.slice(-OVERLAP);
  }
  get extension(): '.mjs' | '.js' {
    return this.#module ? '.mjs' : '.js';
  }
}

/** Writes `fn`'s code into `dir` as `<base><.mjs|.js>` with `mode`; returns the file's path. */
export async function writeModuleFile(dir: string, base: string, fn: FunctionRecord, mode: number, store: CodeStore | undefined): Promise<string> {
  if (fn.code_ref === undefined) {
    const file = join(dir, base + moduleExtension(fn.code));
    await writeFile(file, fn.code, { mode });
    return file;
  }
  const source = await store?.openRead(fn.namespace, fn.code_ref.digest);
  if (source === undefined || source === null) throw new CodeMissingError(fn.code_ref.digest);
  const partial = join(dir, `.${base}.${randomBytes(4).toString('hex')}.part`);
  const sniffer = new ModuleSniffer();
  const fh = await open(partial, 'wx', mode);
  try {
    for await (const chunk of source) {
      sniffer.push(chunk);
      await fh.write(chunk);
    }
    await fh.close();
    const file = join(dir, base + sniffer.extension);
    await rename(partial, file);
    return file;
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(partial).catch(() => undefined);
    throw err;
  }
}
