// Node prints process warnings (deprecations, MaxListenersExceeded, ...) as
// plain text on stderr, which breaks a log made of JSON records. The gateway
// and the operator route them through their own JSON logger instead.

export function logProcessWarnings(warn: (msg: string, fields: Record<string, unknown>) => void): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    warn('node process warning', { warning: warning.name, code: warning.code, message: warning.message });
  });
}
