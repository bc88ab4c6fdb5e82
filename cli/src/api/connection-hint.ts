// What to tell a user whose server does not answer. A loopback URL is either
// `make start` on this machine or a `kubectl port-forward` (which ends with
// the pod it picked: a restarted or rescheduled gateway pod takes it down);
// any other URL is a remote gateway, where `make start` means nothing.

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  return LOOPBACK_HOSTS.has(host) || host.endsWith('.localhost') || /^127\./.test(host);
}

/** The hint of an ApiConnectionError for the server at `url`. */
export function connectionHint(url: string): string {
  if (isLoopbackUrl(url)) {
    return (
      'is the platform running (make start)? With a kubectl port-forward to a cluster, start it again: it ends with the pod it picked ' +
      '(kubectl -n <release namespace> port-forward svc/<release>-fnhost-gateway 8080:8080). Pass --url or set FNHOST_URL to use another server'
    );
  }
  return 'check the URL (--url, FNHOST_URL or the one saved by fnhost login) and that the gateway answers there (kubectl get pods,ingress -n <release namespace>)';
}

/**
 * A TLS handshake that met a plain-HTTP server: OpenSSL reads the HTTP answer as a TLS record of
 * an unknown version ("wrong version number"; Node's code EPROTO). fnhost's gateway serves plain
 * HTTP unless a TLS proxy or Ingress is in front, so `https://` against its port is a typo.
 */
export function isHttpsToPlainHttp(url: string, cause: { code?: string; message: string }): boolean {
  if (!url.toLowerCase().startsWith('https:')) return false;
  return cause.code === 'EPROTO' || cause.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number|packet length too long/i.test(cause.message);
}

/** The message and hint of a failure to reach the server at `url` at all. */
export function connectionFailure(url: string, cause: { code?: string; message: string }): { message: string; hint: string } {
  if (isHttpsToPlainHttp(url, cause)) {
    const plain = 'http:' + url.slice('https:'.length);
    return {
      message: `the server at ${url} answers plain HTTP, not HTTPS (TLS handshake failed: ${cause.code ?? cause.message})`,
      hint: `use ${plain} (--url, FNHOST_URL or the URL saved by fnhost login); the gateway serves HTTPS only behind a TLS proxy or Ingress`,
    };
  }
  return { message: `cannot reach the fnhost server at ${url} (${cause.code ?? cause.message})`, hint: connectionHint(url) };
}
