import { expect } from 'chai';
import { buildTestRequest, formatTestResult } from '../../../cli/src/commands/test.ts';
import { createPainter } from '../../../cli/src/format/color.ts';

describe('cli commands: function:test request and result', () => {
  it('sends POST / with {} by default', () => {
    expect(buildTestRequest({})).to.deep.equal({ method: 'POST', path: '/', body: {} });
  });
  it('takes --data JSON of any shape, --method and --path with a query', () => {
    expect(buildTestRequest({ data: '[1,2]', method: 'put', path: '/users/42?x=1' })).to.deep.equal({
      method: 'PUT',
      path: '/users/42',
      query: { x: '1' },
      body: [1, 2],
    });
    expect(buildTestRequest({ data: 'null' }).body).to.equal(null);
    expect(buildTestRequest({ method: 'GET' })).to.deep.equal({ method: 'GET', path: '/' });
  });
  it('names bad --data, --method and --path', () => {
    expect(() => buildTestRequest({ data: '{nope' })).to.throw(/--data is not valid JSON/);
    expect(() => buildTestRequest({ method: 'GE T' })).to.throw(/--method "GE T"/);
    expect(() => buildTestRequest({ path: 'users' })).to.throw(/--path "users" must start with "\/"/);
  });
  it('prints status, duration, error and the body', () => {
    const lines = formatTestResult(
      { log_id: 'log_x', status_code: 500, execution_time_ms: 7, error_message: 'boom', headers: {}, body: { error: 'boom' } },
      createPainter(false),
    );
    expect(lines.slice(0, 4)).to.deep.equal(['Status:   ✗ 500', 'Duration: 7ms', 'Log:      log_x', 'Error:    boom']);
    expect(lines.join('\n')).to.contain('"error": "boom"');
  });
});
