import { expect } from 'chai';
import { SecretScrubError, environBounds, parseSecretLines, secretRanges } from '../../runtime-image/src/hide-secrets.ts';
import { SECRETS_ON_STDIN, SecretValueError, secretsApart } from '../../gateway/src/executor/secrets-pipe.ts';

describe('runtime credentials out of every environment: pure parts', () => {
  it('finds the value bytes of each named entry in an environ block, and only those', () => {
    const block = Buffer.from('PATH=/bin\0FNHOST_RUNTIME_TOKEN=abc123\0XFNHOST_RUNTIME_TOKEN=no\0FNHOST_RUNTIME_TOKENS=no\0HOME=/\0', 'latin1');
    const ranges = secretRanges(block, ['FNHOST_RUNTIME_TOKEN']);
    expect(ranges).to.have.length(1);
    expect(block.subarray(ranges[0]!.offset, ranges[0]!.offset + ranges[0]!.length).toString()).to.equal('abc123');
    // The last entry need not end with a NUL; an empty value is an empty range.
    expect(secretRanges(Buffer.from('A=1\0FNHOST_SPECIALIZE_TOKEN=', 'latin1'), ['FNHOST_SPECIALIZE_TOKEN'])).to.deep.equal([{ offset: 28, length: 0 }]);
  });

  it('reads env_start and env_end (fields 50, 51) from /proc/<pid>/stat, a comm with spaces and parentheses included', () => {
    const tail = Array.from({ length: 49 }, (_, i) => String(i + 3));
    tail[50 - 3] = '140000000001000';
    tail[51 - 3] = '140000000002000';
    expect(environBounds(`42 (node (x) y) ${tail.join(' ')}\n`)).to.deep.equal({ start: 140000000001000, end: 140000000002000 });
    expect(environBounds('42 (old kernel) S 1 2 3')).to.equal(undefined);
  });

  it('the gateway sends credentials as stdin lines, the runtime takes only those it knows', () => {
    const { env, message } = secretsApart({ PORT: '0', FNHOST_RUNTIME_TOKEN: 'tok', FNHOST_FUNCTION_ID: 'id' });
    expect(env).to.deep.equal({ PORT: '0', FNHOST_FUNCTION_ID: 'id', [SECRETS_ON_STDIN]: '1' });
    expect(message).to.equal('FNHOST_RUNTIME_TOKEN=tok\n\n');
    expect(parseSecretLines(message!, ['FNHOST_RUNTIME_TOKEN'])).to.deep.equal({ FNHOST_RUNTIME_TOKEN: 'tok' });
    expect(secretsApart({ PORT: '0' })).to.deep.equal({ env: { PORT: '0' }, message: undefined });
    expect(() => secretsApart({ FNHOST_RUNTIME_TOKEN: 'a\nPATH=/evil' })).to.throw(SecretValueError, 'FNHOST_RUNTIME_TOKEN must be one non-empty line');
    expect(() => parseSecretLines('NODE_OPTIONS=--inspect\n\n', ['FNHOST_RUNTIME_TOKEN'])).to.throw(SecretScrubError, '"NODE_OPTIONS" is not a credential');
  });
});
