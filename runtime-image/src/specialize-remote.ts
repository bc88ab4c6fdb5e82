// Remote specialization (docs/internal-protocol.md "Remote specialization"; issue 32): a generic
// runtime in a pool pod of a cluster is specialized by the gateway over the pod network, not from
// loopback. What changes from the one-machine warm pool (specialize.ts):
// - FNHOST_SPECIALIZE_REMOTE=1 lets it listen on any HOST and take the request from any peer; the
//   credential (FNHOST_SPECIALIZE_TOKEN, the namespace's pool key, from a Secret the operator writes)
//   is then the only guard, compared in constant time, and the NetworkPolicy admits only the gateway.
// - The code is not a path on a shared disk: inline code travels in the request (`code`) and is
//   written into the pod's emptyDir; referenced code (FNHOST_CODE_DIGEST) is fetched by digest from
//   the gateway with the function's runtime token, as a function pod does (code-fetch.ts). Either
//   way the runtime names the file itself (CODE_DIR/<sha256 hex>.js): the request never picks a path.
// - FNHOST_GATEWAY_URL and FNHOST_EGRESS_PROXY are the pool pod's own (the operator's settings):
//   the request may not point the function at another gateway or proxy.

export const REMOTE_VAR = 'FNHOST_SPECIALIZE_REMOTE';
/** Where a remote-specialized runtime keeps its function's code: the pod's /tmp emptyDir (the root is read-only). */
export const CODE_DIR = '/tmp/fnhost-code';
/** The pool pod's own variables a remote specialization keeps; the function's env may not set them. */
export const REMOTE_OWN_VARS = ['FNHOST_GATEWAY_URL', 'FNHOST_EGRESS_PROXY', 'FNHOST_FUNCTION_FILE', REMOTE_VAR];

/** The image's own variables (runtime-image/Dockerfile) a function pod has: a remote specialization keeps them unless the function sets them. */
export const IMAGE_VARS = ['NODE_ENV', 'NODE_COMPILE_CACHE', 'HOME'];

export function isRemote(env: NodeJS.ProcessEnv): boolean {
  return env[REMOTE_VAR] === '1';
}

/** The file the runtime loads: CODE_DIR/<hex>.js, hex the sha256 of the inline code or of the referenced digest. */
export function codeFileOf(code: string | undefined, digest: string | undefined, dir = CODE_DIR): string {
  if (digest !== undefined && digest !== '') return `${dir}/${digest.slice('sha256:'.length)}.js`;
  const hex = process.getBuiltinModule('node:crypto').createHash('sha256').update(code ?? '').digest('hex');
  return `${dir}/${hex}.js`;
}

/** Writes inline code where the runtime will load it (mode 0600: the handler runs as the same uid but needs no other reader). */
export function placeInlineCode(file: string, code: string): void {
  const fs = process.getBuiltinModule('node:fs');
  const path = process.getBuiltinModule('node:path');
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, code, { mode: 0o600 });
}
