import { createHash, createHmac } from 'node:crypto';

// AWS Signature Version 4 recomputed from a request as the SDK signed it (header signing, a
// payload hash given in x-amz-content-sha256), so a test can check the SDK's signature with the
// test's own copy of the key instead of only its shape. The algorithm of
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
// for S3, whose paths are encoded once (not twice as other services').

export interface SignedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[] | null>;
  headers: Record<string, string>;
}

const encode = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

/** The parts of an `Authorization: AWS4-HMAC-SHA256 …` header, or null when it is not one. */
export function parseAuthorization(header: string): { accessKeyId: string; date: string; region: string; service: string; signedHeaders: string[]; signature: string } | null {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(header);
  if (m === null) return null;
  return { accessKeyId: m[1]!, date: m[2]!, region: m[3]!, service: m[4]!, signedHeaders: m[5]!.split(';'), signature: m[6]! };
}

export function canonicalRequest(req: SignedRequest, signedHeaders: string[]): string {
  const path = req.path.split('/').map((segment) => encode(decodeURIComponent(segment))).join('/');
  const query = Object.entries(req.query)
    .flatMap(([k, v]) => (v === null ? [[k, '']] : Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))
    .map(([k, v]) => `${encode(k!)}=${encode(v!)}`)
    .sort()
    .join('&');
  const lower = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v.trim().replace(/\s+/g, ' ')]));
  const headers = signedHeaders.map((h) => `${h}:${lower[h] ?? ''}\n`).join('');
  return [req.method, path, query, headers, signedHeaders.join(';'), lower['x-amz-content-sha256'] ?? 'UNSIGNED-PAYLOAD'].join('\n');
}

/** The signature SigV4 gives `req` with `secretAccessKey`, for the scope its Authorization names. */
export function sigV4Signature(req: SignedRequest, secretAccessKey: string): string {
  const auth = parseAuthorization(req.headers['authorization'] ?? '');
  if (auth === null) throw new Error(`not a SigV4 Authorization header: ${req.headers['authorization']}`);
  const amzDate = req.headers['x-amz-date'] ?? '';
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonicalRequest(req, auth.signedHeaders)).digest('hex')].join('\n');
  let key: Buffer = createHmac('sha256', 'AWS4' + secretAccessKey).update(auth.date).digest();
  for (const part of [auth.region, auth.service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex');
}
