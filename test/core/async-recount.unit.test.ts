import { expect } from 'chai';
import { recountCorrections, usageDrift } from '../../core/src/async-recount.ts';

// The pure part of the async byte recount (core/src/async-recount.ts): the drift of each count
// from the calls holding a request, and a correction only when two passes see the same drift.

const TOTAL = ':total';
const held = (...calls: Array<[string, number]>) => calls.map(([function_id, bytes]) => ({ function_id, bytes }));

describe('async byte recount (pure)', () => {
  it('the drift is counted minus held, per function and for the total; exact counts have none', () => {
    const counts = new Map([['f1', 300], ['f2', 50], [TOTAL, 350]]);
    expect([...usageDrift(counts, held(['f1', 100], ['f1', 200], ['f2', 50]), TOTAL)]).to.deep.equal([]);
    // A killed gateway's reservation of 40 bytes on f1 whose insert never landed.
    const leaked = new Map([['f1', 340], ['f2', 50], [TOTAL, 390]]);
    expect([...usageDrift(leaked, held(['f1', 100], ['f1', 200], ['f2', 50]), TOTAL)]).to.deep.equal([['f1', 40], [TOTAL, 40]]);
    // A finished call whose release never came: counted, held by nobody (no call of f3 left).
    expect([...usageDrift(new Map([['f3', 7], [TOTAL, 7]]), [], TOTAL)]).to.deep.equal([['f3', 7], [TOTAL, 7]]);
    // Counted too little (a call held without its count): a negative drift.
    expect([...usageDrift(new Map([['f1', 0], [TOTAL, 0]]), held(['f1', 9]), TOTAL)]).to.deep.equal([['f1', -9], [TOTAL, -9]]);
  });

  it('corrects only a drift the last pass saw the same, by minus the drift, from the count this pass read', () => {
    const counts = new Map([['f1', 340], [TOTAL, 390], ['f2', 60]]);
    const first = recountCorrections(new Map(), new Map([['f1', 40], [TOTAL, 40]]), counts);
    expect(first.corrections).to.deep.equal([]);
    expect([...first.drift]).to.deep.equal([['f1', 40], [TOTAL, 40]]);
    // The next pass: f1 and the total drift the same (a leak); f2's drift is new (a write under way).
    const second = recountCorrections(first.drift, new Map([['f1', 40], [TOTAL, 40], ['f2', 10]]), counts);
    expect(second.corrections).to.deep.equal([{ id: 'f1', counted: 340, by: -40 }, { id: TOTAL, counted: 390, by: -40 }]);
    expect([...second.drift]).to.deep.equal([['f2', 10]]);
    // A drift that changed between passes (a write landed meanwhile) is not corrected.
    expect(recountCorrections(new Map([['f2', 10]]), new Map([['f2', 25]]), counts).corrections).to.deep.equal([]);
    // Negative drifts too.
    expect(recountCorrections(new Map([['f1', -9]]), new Map([['f1', -9]]), new Map([['f1', 0]])).corrections).to.deep.equal([{ id: 'f1', counted: 0, by: 9 }]);
  });
});
