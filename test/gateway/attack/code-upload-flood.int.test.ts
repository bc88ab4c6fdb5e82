import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { basename } from 'node:path';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import { putCode } from '../../helpers/code-upload.ts';
import { targetOf } from './gateway-target.ts';
import { folderBytes, Neighbour } from './neighbour.ts';

// Attack (issue 30): a client with the management token floods the code store with uploads of
// distinct 5 MiB blobs, four at a time (retrying when told to). The shared disk is bounded by the code store's byte
// bound (here 60 MiB, set small to keep the test quick) and the uploads at once (4): past them
// uploads are refused (507 code_store_full naming the bound, 429 too_many_uploads), the data
// folder grows by no more than the bound plus a margin, no temp file is left, and a neighbour
// function keeps being served.
//
// Bounded: 24 uploads of 5 MiB (120 MiB stored at most), 4 at a time plus one more to meet the
// uploads-at-once bound, loopback only.

const BOUND = 60 * 1024 * 1024;
const BLOB = 5 * 1024 * 1024;
const UPLOADS = 24;
/** The store's SQLite rows and the records of the neighbour's calls. */
const MARGIN = 8 * 1024 * 1024;

/** Upload i: a distinct 8-byte head before the same 5 MiB of bytes. */
function blob(base: Buffer, i: number): { chunks: Buffer[]; digest: string } {
  const head: Buffer = Buffer.alloc(8);
  head.writeUInt32BE(i, 4);
  const chunks = [head];
  for (let at = 0; at < base.length; at += 64 * 1024) chunks.push(base.subarray(at, at + 64 * 1024));
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c);
  return { chunks, digest: `sha256:${hash.digest('hex')}` };
}

describe('attack: a client floods the code store with uploads (issue 30)', function () {
  this.timeout(240_000);
  let gw: RunningGateway;

  before(async () => {
    gw = await startGateway({
      prefix: ['prlimit', '--nofile=4096:4096', '--'],
      env: { FNHOST_NOFILE: '0', FNHOST_CODE_STORE_MAX_BYTES: String(BOUND), FNHOST_CODE_STORE_NAMESPACE_MAX_BYTES: String(BOUND) },
      startTimeoutMs: 60_000,
      main: process.env.FNHOST_ATTACK_GATEWAY_MAIN,
    });
  });
  after(async () => {
    await gw?.stop();
  });

  it('refuses uploads past the byte bound (507) and past the uploads at once (429); the data folder grows by at most the bound; the neighbour is served', async () => {
    const target = targetOf(gw);
    const n = await Neighbour.start(target);
    const before = await folderBytes(gw.dataDir);
    const base: Buffer = Buffer.alloc(BLOB - 8, 'abcdefgh');

    n.startProbing();
    const statuses: number[] = [];
    const messages = new Set<string>();
    let next = 0;
    let tooMany = 0;
    const worker = async (): Promise<void> => {
      while (next < UPLOADS) {
        const { chunks, digest } = blob(base, next++);
        for (let attempt = 0; ; attempt++) {
          const r = await putCode(gw.url, gw.token, digest, chunks, { length: BLOB }).catch((err: Error) => ({ status: 0, body: { message: err.message } }));
          if (r.status >= 400 || r.status === 0) messages.add(`${r.status} ${String(r.body?.message).replace(/\d+/g, 'N')}`);
          // Past the uploads at once: as a client told Retry-After would, a little later (bounded).
          if (r.status === 429 && attempt < 50) {
            tooMany++;
            await new Promise((resolve) => setTimeout(resolve, 100));
            continue;
          }
          statuses.push(r.status);
          break;
        }
      }
    };
    // Five clients: one more than the uploads at once (4), so that bound is met too.
    await Promise.all(Array.from({ length: 5 }, worker));
    const during = await n.stopProbing();

    const count = (s: number) => statuses.filter((x) => x === s).length;
    const summary = `statuses ${JSON.stringify(statuses)} (429s retried: ${tooMany}); messages ${JSON.stringify([...messages])}`;
    expect(count(201), summary).to.be.at.most(Math.floor(BOUND / BLOB));
    expect(count(507), summary).to.be.greaterThan(0);
    // A refusal before the body is read closes the connection: a client still writing may see
    // EPIPE or ECONNRESET instead of the answer (status 0 here). The gateway's count says what it refused.
    expect(statuses.every((x) => x === 201 || x === 507 || x === 0), summary).to.equal(true);
    expect([...messages].filter((m) => m.startsWith('0 ')).every((m) => /EPIPE|ECONNRESET/.test(m)), summary).to.equal(true);
    expect([...messages].some((m) => /^507 the code store holds N bytes; N more would pass its bound of N bytes \(FNHOST_CODE_STORE_MAX_BYTES\)/.test(m)), summary).to.equal(true);

    const grown = (await folderBytes(gw.dataDir)) - before;
    expect(grown, `the data folder grew by ${grown} bytes; the bound is ${BOUND}, the margin ${MARGIN}`).to.be.at.most(BOUND + MARGIN);
    // Refused and cut uploads leave no temp file behind (each would hold up to a blob of disk).
    const temps = (await readdir(gw.dataDir, { recursive: true })).filter((name) => basename(String(name)).startsWith('.upload-'));
    expect(temps, 'temp files left by refused uploads').to.deep.equal([]);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    // Every attempt was stored or refused, and the gateway counted each refusal once. A status 0 is
    // a refusal the client could not read (its write met the closed connection first): the 507 or
    // the 429 it was. So the stored plus the counted refusals are the attempts (the uploads plus the
    // 429s retried), and the 429s counted exceed the 429s read by at most the unread answers.
    const byteRefusals = Number(/fnhost_refused_total\{reason="code_store_bytes"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    const slotRefusals = Number(/fnhost_refused_total\{reason="code_uploads"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    const counted = `${summary}; counted refusals: code_store_bytes ${byteRefusals}, code_uploads ${slotRefusals}`;
    expect(count(201) + byteRefusals + slotRefusals, counted).to.equal(UPLOADS + tooMany);
    expect(slotRefusals - tooMany, counted).to.be.within(0, count(0));

    if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(`code-upload-flood: ${summary}; folder +${grown} bytes; neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during p95 ${during.p95Ms.toFixed(1)} ms, ${during.ok}/${during.calls} ok\n`);
    n.expectServed(during, 'code upload flood');
    await n.expectRecovered('code upload flood');
    n.close();
  });
});
