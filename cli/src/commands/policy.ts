import { validateHostPattern } from '@fnhost/core/netpattern.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import type { NetworkPolicyBody } from '../api/client.ts';
import { asUsage, functionRef, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// fnhost policy:show / policy:default / policy:add / policy:remove / policy:check: the egress
// network policies through the management API (so cluster RBAC applies: fnhost-egress-admin to
// change them). An add or remove reads the policy, changes one entry and writes it back, so
// nobody retypes a list; two people editing the same policy at once: the last write wins, as
// with the panel's editor.

const policyText = (p: NetworkPolicyBody | null): string[] =>
  p === null
    ? ['  (none: the global policy applies)']
    : [`  default: ${p.default}`, `  allow:   ${p.allow.length === 0 ? '(none)' : p.allow.join(', ')}`, `  deny:    ${p.deny.length === 0 ? '(none)' : p.deny.join(', ')}`];

function listName(raw: string | undefined): 'allow' | 'deny' {
  if (raw !== 'allow' && raw !== 'deny') throw new UsageError(`the list must be allow or deny, got ${JSON.stringify(raw)}`, { hint: 'for example: fnhost policy:add allow api.example.com --function hello' });
  return raw;
}

/** The --function option as a function reference, or undefined for the global policy. */
function target(ctx: CommandContext): string | undefined {
  const fn = stringOption(ctx, 'function');
  return fn === undefined ? undefined : functionRef({ ...ctx, args: [fn] });
}

export async function run(ctx: CommandContext): Promise<number> {
  const client = await ctx.client();
  const paint = createPainter(ctx.color);
  const ok = paint.green('✓');
  switch (ctx.spec.name) {
    case 'policy:show': {
      const ref = target(ctx);
      if (ref === undefined) {
        const all = await client.policies();
        if (ctx.output === 'json') return (printJson(ctx, all), 0);
        const lines = ['Global policy', ...policyText(all.global)];
        const count = Object.keys(all.functions).length;
        lines.push('', count === 0 ? 'No function has a policy of its own.' : `${count} function(s) have a policy of their own (fnhost policy:show --function <name>).`);
        printLines(ctx, lines);
        return 0;
      }
      const one = await client.functionPolicy(ref);
      if (ctx.output === 'json') return (printJson(ctx, one), 0);
      printLines(ctx, [`Policy of ${one.name}`, ...policyText(one.policy), '', 'Global policy', ...policyText(one.global)]);
      return 0;
    }
    case 'policy:default': {
      const value = ctx.args[0];
      if (value !== 'allow' && value !== 'deny') throw new UsageError(`the default must be allow or deny, got ${JSON.stringify(value)}`);
      const ref = target(ctx);
      const current = await currentPolicy(client, ref);
      const written = await client.setPolicy(ref, { ...current, default: value });
      if (ctx.output === 'json') return (printJson(ctx, written), 0);
      printLines(ctx, [`${ok} ${ref === undefined ? 'Global' : ref} default: ${written.default}`]);
      return 0;
    }
    case 'policy:add':
    case 'policy:remove': {
      const list = listName(ctx.args[0]);
      const pattern = asUsage(() => validateHostPattern(ctx.args[1]));
      const ref = target(ctx);
      const current = await currentPolicy(client, ref);
      const adding = ctx.spec.name === 'policy:add';
      if (!adding && !current[list].includes(pattern)) throw new UsageError(`${pattern} is not in the ${list} list of the ${ref === undefined ? 'global' : `${ref}`} policy`, { hint: `it holds: ${current[list].join(', ') || '(nothing)'}` });
      const next = adding ? (current[list].includes(pattern) ? current[list] : [...current[list], pattern]) : current[list].filter((p) => p !== pattern);
      const written = await client.setPolicy(ref, { ...current, [list]: next });
      if (ctx.output === 'json') return (printJson(ctx, written), 0);
      printLines(ctx, [`${ok} ${adding ? 'Added' : 'Removed'} ${pattern} ${adding ? 'to' : 'from'} the ${list} list of the ${ref === undefined ? 'global' : ref} policy`, ...policyText(written)]);
      return 0;
    }
    case 'policy:check': {
      const ref = functionRef(ctx);
      const hostPort = ctx.args[1];
      if (hostPort === undefined || hostPort === '') throw new UsageError('policy:check needs <host[:port]>');
      const answer = await client.checkPolicy(ref, hostPort);
      if (ctx.output === 'json') return (printJson(ctx, answer), answer.allowed ? 0 : 1);
      const lines = [answer.allowed ? paint.green('yes') : paint.red('no'), `  ${answer.message}`, `  rule: ${answer.rule} (${answer.scope})`];
      for (const a of answer.addresses) lines.push(`  ${a.address}: ${a.allowed ? 'allowed' : 'denied'} (${a.scope} rule ${a.rule})`);
      printLines(ctx, lines);
      // As kubectl auth can-i: exit 0 for yes, 1 for no.
      return answer.allowed ? 0 : 1;
    }
  }
  throw new UsageError(`unknown command ${ctx.spec.name}`);
}

/** The policy an edit starts from: the function's, or for a function without one a new one with the global default (so the edit changes only the entry). */
async function currentPolicy(client: Awaited<ReturnType<CommandContext['client']>>, ref: string | undefined): Promise<NetworkPolicyBody> {
  if (ref === undefined) return (await client.policies()).global;
  const one = await client.functionPolicy(ref);
  return one.policy ?? { default: one.global.default, allow: [], deny: [] };
}
