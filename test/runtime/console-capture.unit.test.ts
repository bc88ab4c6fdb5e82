import { expect } from 'chai';
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleCapture, MAX_OPEN, MAX_PER_POST, consoleSender, type WireExecution } from '../../runtime-image/src/console-capture.ts';

// The runtime's per-execution console buffer (runtime-image/src/console-capture.ts), on a clock
// the test moves; flushAll stands in for the interval that ships what is due.

function capture(graceMs = 1000) {
  let now = 1_000_000;
  const sent: WireExecution[][] = [];
  const c = new ConsoleCapture({ graceMs, now: () => now, send: async (batch) => void sent.push(batch) });
  return { c, sent, advance: (ms: number) => (now += ms), at: () => now };
}

describe('runtime console capture', () => {
  it('keeps each execution\'s lines apart, in order, with offsets from its start, split at newlines', async () => {
    const { c, sent, advance, at } = capture();
    c.begin('log_a');
    advance(5);
    c.begin('log_b');
    c.write('log_a', 'o', at(), 'one\ntwo\n');
    c.write('log_b', 'e', at() + 2, 'b says');
    c.write('log_unknown', 'o', at(), 'ignored');
    await c.flushAll();
    expect(sent.flat()).to.deep.equal([
      { id: 'log_a', lines: [[5, 'o', 'one'], [5, 'o', 'two']], dropped_lines: 0, dropped_bytes: 0 },
      { id: 'log_b', lines: [[2, 'e', 'b says']], dropped_lines: 0, dropped_bytes: 0 },
    ]);
  });

  it('bounds lines and bytes, counting what it drops', async () => {
    const { c, sent, at } = capture();
    c.begin('log_a');
    for (let i = 0; i < 1200; i++) c.write('log_a', 'o', at(), 'x'.repeat(10));
    c.begin('log_b');
    c.write('log_b', 'o', at(), 'y'.repeat(20_000));
    for (let i = 0; i < 10; i++) c.write('log_b', 'o', at(), 'z'.repeat(8000));
    await c.flushAll();
    const [a, b] = sent.flat();
    expect(a!.lines).to.have.length(1000);
    expect(a!.dropped_lines).to.equal(200);
    expect(a!.dropped_bytes).to.equal(2000);
    // A line is cut at 8,192 characters (the rest dropped bytes); 7 lines of 8,000 fit after it in 64 KiB.
    expect(b!.lines[0]![2]).to.have.length(8192);
    expect(b!.lines).to.have.length(1 + 7);
    expect(b!.dropped_lines).to.equal(3);
    expect(b!.dropped_bytes).to.equal(20_000 - 8192 + 3 * 8000);
  });

  it('still takes output for the grace period after the answer, then nothing', async () => {
    const { c, sent, advance, at } = capture(500);
    c.begin('log_a');
    c.answered('log_a');
    advance(400);
    c.write('log_a', 'o', at(), 'deferred');
    await c.flushAll();
    c.write('log_a', 'o', at(), 'too late');
    await c.flushAll();
    expect(sent.flat()).to.deep.equal([{ id: 'log_a', lines: [[400, 'o', 'deferred']], dropped_lines: 0, dropped_bytes: 0 }]);
  });

  it('holds at most MAX_OPEN executions (the oldest goes early) and posts at most MAX_PER_POST at once', async () => {
    const { c, sent } = capture();
    for (let i = 0; i < MAX_OPEN + 1; i++) {
      c.begin(`log_${i}`);
      c.write(`log_${i}`, 'o', 0, `line ${i}`);
    }
    await c.flushAll();
    expect(sent[0]!.map((e) => e.id)).to.deep.equal(['log_0']);
    expect(sent.slice(1).every((batch) => batch.length <= MAX_PER_POST)).to.equal(true);
    expect(sent.flat()).to.have.length(MAX_OPEN + 1);
  });

  it('a call that wrote nothing is sent nothing (its record reads "no output" as it is)', async () => {
    const { c, sent } = capture();
    c.begin('log_silent');
    c.begin('log_loud');
    c.write('log_loud', 'e', 0, 'boom');
    c.answered('log_silent');
    await c.flushAll();
    expect(sent.flat().map((e) => e.id)).to.deep.equal(['log_loud']);
  });
});

describe('runtime console sender and the gateway\'s rate bound', () => {
  it('drops a batch answered 429 with one note, sends nothing until Retry-After has passed, then notes what it dropped', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fnhost-console-'));
    const socketPath = join(dir, 'gw.sock');
    let posts = 0;
    const server = createServer((req, res) => {
      posts++;
      req.resume();
      req.on('end', () => res.writeHead(posts === 1 ? 429 : 204, posts === 1 ? { 'retry-after': '2' } : {}).end());
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      let t = 0;
      const errors: string[] = [];
      const send = consoleSender(`unix:${socketPath}`, 'tok', (err) => errors.push(err.message), () => t);
      const batch = [{ id: 'log_a', lines: [[0, 'o', 'hi']] as Array<[number, 'o' | 'e', string]>, dropped_lines: 0, dropped_bytes: 0 }];
      await send(batch);
      expect(posts).to.equal(1);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.match(/HTTP 429.*not sent for 2 s/);
      t = 1999;
      await send(batch);
      await send(batch);
      expect(posts, 'nothing is sent while the pause lasts').to.equal(1);
      t = 2000;
      await send(batch);
      expect(posts).to.equal(2);
      expect(errors).to.have.length(2);
      expect(errors[1]).to.match(/2 more executions was dropped/);
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
