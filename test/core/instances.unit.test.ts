import { expect } from 'chai';
import { isStale, judgeDead, openNotes } from '../../core/src/instances.ts';

// The arithmetic of counting what a killed gateway lost (core/src/instances.ts).

describe('dead gateway instances: what counts as dead and what it lost', () => {
  it('is dead only once its last progress is more than the bound old', () => {
    const bound = 30_000;
    expect(isStale(1_000, 1_000, bound)).to.equal(false);
    expect(isStale(1_000, 31_000, bound), 'exactly the bound').to.equal(false);
    expect(isStale(1_000, 31_001, bound)).to.equal(true);
    expect(isStale(50_000, 31_001, bound), 'a heartbeat from a clock ahead of ours').to.equal(false);
  });

  it('counts accepted - written from the last progress when no batch was in flight', () => {
    expect(judgeDead({ accepted: 1_250, written: 1_000, heartbeatAt: 5_000 }, [], 0)).to.deep.equal({ accepted: 1_250, written: 1_000, lost: 250, at: 5_000 });
    expect(judgeDead({ accepted: 0, written: 0, heartbeatAt: 5_000 }, [], 0), 'an idle instance').to.deep.equal({ accepted: 0, written: 0, lost: 0, at: 5_000 });
  });

  // A batch in MongoDB: note (upTo, accepted) -> records -> counts -> progress raised to upTo -> note removed.
  describe('a kill in the middle of a batch', () => {
    const last = { accepted: 1_100, written: 1_000, heartbeatAt: 5_000 };
    // The next batch: 300 records, so written 1,300 once stored; 1,450 accepted when it was sent.
    const note = { upTo: 1_300, accepted: 1_450, at: 5_050 };

    it('before any record of the batch was stored: the note raises accepted, nothing was written', () => {
      expect(openNotes(last.written, [note])).to.deep.equal([note]);
      expect(judgeDead(last, [note], 0)).to.deep.equal({ accepted: 1_450, written: 1_000, lost: 450, at: 5_050 });
    });

    it('with part of the batch stored: those records count as written', () => {
      expect(judgeDead(last, [note], 120)).to.deep.equal({ accepted: 1_450, written: 1_120, lost: 330, at: 5_050 });
    });

    it('with the whole batch stored but the progress not raised yet: the batch counts as written', () => {
      expect(judgeDead(last, [note], 300)).to.deep.equal({ accepted: 1_450, written: 1_300, lost: 150, at: 5_050 });
    });

    it('after the progress was raised but before the note was removed: the note is no longer open, nothing counts twice', () => {
      const raised = { accepted: 1_450, written: 1_300, heartbeatAt: 5_060 };
      expect(openNotes(raised.written, [note])).to.deep.equal([]);
      expect(judgeDead(raised, [note], 0)).to.deep.equal({ accepted: 1_450, written: 1_300, lost: 150, at: 5_060 });
    });

    it('a batch resent after a failure leaves two open notes over the same records; their stored records are counted once by the caller', () => {
      const first = { upTo: 1_300, accepted: 1_450, at: 5_050 };
      const resend = { upTo: 1_400, accepted: 1_500, at: 5_300 };
      expect(openNotes(last.written, [first, resend])).to.have.length(2);
      // 400 distinct records named by the two notes, all stored.
      expect(judgeDead(last, [first, resend], 400)).to.deep.equal({ accepted: 1_500, written: 1_400, lost: 100, at: 5_300 });
    });
  });

  it('never counts below zero', () => {
    expect(judgeDead({ accepted: 10, written: 10, heartbeatAt: 1 }, [], 5).lost).to.equal(0);
  });
});
