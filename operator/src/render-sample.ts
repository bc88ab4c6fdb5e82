import { dump } from 'js-yaml';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { configMapFor, cronJobFor, deploymentFor, functionsNetworkPolicyFor, secretFor, serviceFor } from './builders/index.ts';
import { loadSettings } from './settings.ts';
import type { KubeObject } from './types.ts';

// node operator/src/render-sample.ts [ENV=VALUE...]: every object the operator
// builds for two sample Functions (one called over HTTP, one on a schedule), as
// multi-document YAML on stdout. The builders are pure, so this is exactly what
// the operator applies; charts/scan.sh runs the policy scanner over it.
// ENV=VALUE arguments are operator settings (docs/operator.md), for example
// FNHOST_RUNTIME_IMAGE=... as the chart sets it.

const SAMPLE_TOKEN_KEY = 'sample-token-key-for-rendering-only-0123456789';

function sample(name: string, spec: Partial<FunctionResource['spec']>): FunctionResource {
  return {
    apiVersion: 'fnhost.dev/v1alpha1',
    kind: 'Function',
    metadata: { name, namespace: 'team-a', uid: `00000000-0000-4000-8000-${name.length.toString().padStart(12, '0')}`, generation: 1 },
    spec: { code: 'export default (req, res) => res.json({ ok: true })', scaleToZero: { idleSeconds: 0 }, ...spec },
  };
}

export function renderSample(env: Record<string, string>): KubeObject[] {
  const settings = loadSettings({ FNHOST_TOKEN_KEY: SAMPLE_TOKEN_KEY, ...env }, { namespace: 'fnhost-system', host: 'render-sample' });
  const functions = [
    sample('hello', { routes: ['/hello'], env: [{ name: 'GREETING', value: 'hi' }], memoryMiB: 128, replicas: 2 }),
    sample('nightly', { schedule: { cron: '0 3 * * *', timezone: 'Europe/Berlin' } }),
  ];
  const objects = functions.flatMap((fn) => [configMapFor(fn), secretFor(fn, settings), deploymentFor(fn, settings), serviceFor(fn), cronJobFor(fn, settings)].filter((o): o is KubeObject => o !== null));
  // The namespace's NetworkPolicy, as the operator keeps it when FNHOST_NETWORK_POLICY is on.
  return settings.networkPolicy === undefined ? objects : [...objects, functionsNetworkPolicyFor('team-a', settings.networkPolicy)];
}

if (import.meta.main) {
  const env: Record<string, string> = {};
  for (const arg of process.argv.slice(2)) {
    const eq = arg.indexOf('=');
    if (eq <= 0) {
      process.stderr.write(`usage: node operator/src/render-sample.ts [NAME=VALUE...] (got ${JSON.stringify(arg)})\n`);
      process.exit(2);
    }
    env[arg.slice(0, eq)] = arg.slice(eq + 1);
  }
  process.stdout.write(renderSample(env).map((o) => dump(o, { noRefs: true, lineWidth: -1 })).join('---\n'));
}
