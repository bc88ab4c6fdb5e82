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
