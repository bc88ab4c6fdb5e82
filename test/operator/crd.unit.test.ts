import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { limits } from '@fnhost/core';
import { functionCrd } from '../../operator/src/crd.ts';

describe('operator CRD file', () => {
  const file = load(readFileSync(new URL('../../crds/fnhost.dev_functions.yaml', import.meta.url), 'utf8')) as any;

  it('crds/fnhost.dev_functions.yaml is what operator/src/crd.ts generates (run: node operator/src/crd-gen.ts > crds/fnhost.dev_functions.yaml)', () => {
    expect(file).to.deep.equal(JSON.parse(JSON.stringify(functionCrd())));
  });

  it('takes its limits from core', () => {
    const spec = file.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
    expect(spec.code.maxLength).to.equal(limits.MAX_CODE_BYTES);
    expect(spec.timeoutSeconds).to.include({ maximum: limits.MAX_TIMEOUT_SECONDS, default: limits.DEFAULT_TIMEOUT_SECONDS });
    expect(spec.memoryMiB).to.include({ minimum: limits.MIN_MEMORY_MIB, maximum: limits.MAX_MEMORY_MIB, default: limits.DEFAULT_MEMORY_MIB });
    expect(spec.retention.properties.days.maximum).to.equal(limits.MAX_RETENTION_DAYS);
    expect(file.spec.versions[0].schema.openAPIV3Schema['x-kubernetes-validations'][0].rule).to.equal(`self.metadata.name.size() <= ${limits.MAX_FUNCTION_NAME_LENGTH}`);
  });

  it('the cron rules accept what the CronJob controller accepts and name the bad field', () => {
    // RE2 and JavaScript agree on these patterns once the (?i:...) groups are expanded.
    const rules: Array<{ rule: string; message: string }> = file.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.schedule['x-kubernetes-validations'];
    const regexes = rules.map((r) => [...r.rule.matchAll(/matches\(r'([^']*)'\)/g)].map((m) => m[1]!));
    const toJs = (re: string) => new RegExp(re.replace(/\(\?i:([^)]*)\)/g, (_, names: string) => `(${names.split('|').map((n) => `${n}|${n.toUpperCase()}|${n[0]!.toUpperCase()}${n.slice(1)}`).join('|')})`));
    const failing = (cron: string) =>
      rules.filter((_rule, i) => {
        const [first, second] = regexes[i]!.map(toJs);
        return i === 0 ? !first!.test(cron) : first!.test(cron) && !second!.test(cron);
      }).map((r) => r.message);
    for (const ok of ['* * * * *', '*/5 * * * *', '0 6 * * MON-FRI', '30 2 1,15 * ?', '0 0 1 JAN,jul *', '0-30/10 8-18 * * 1-5', '0 0 * * 7']) {
      expect(failing(ok), ok).to.deep.equal([]);
    }
    expect(failing('* * * *')[0]).to.contain('exactly five fields');
    expect(failing('60 * * * *')).to.have.length(1).and.to.satisfy((m: string[]) => m[0]!.includes('minute field'));
    expect(failing('0 24 * * *')[0]).to.contain('hour field');
    expect(failing('0 0 32 * *')[0]).to.contain('day-of-month field');
    expect(failing('0 0 * 13 *')[0]).to.contain('month field');
    expect(failing('0 0 * * 8')[0]).to.contain('day-of-week field');
    expect(failing('0 0 * * */0')[0]).to.contain('day-of-week field');
  });
});
