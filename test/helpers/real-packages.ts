import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { parseAuthorization, sigV4Signature } from './sigv4.ts';

// What the fixtures of test/fixtures/packages/ answer, checked the same way on one machine
// (test/cli/real-packages.int.test.ts) and on the cluster (test/e2e/real-packages.cluster.test.ts).

export interface Answer {
  status: number;
  body: any;
}

export const ZOD_VALID = { email: 'ada@example.com', quantity: 3 };
export const ZOD_INVALID = { email: 'not-an-email', quantity: 0, note: 7 };

/** zod 4: the valid order answered as parsed, the invalid one 400 with an issue per bad field. */
export function expectZodAnswers(ok: Answer, bad: Answer): void {
  expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
  expect(ok.body).to.deep.equal({ ok: true, order: ZOD_VALID });
  expect(bad.status, JSON.stringify(bad.body)).to.equal(400);
  expect(bad.body.error).to.equal('invalid_body');
  const byPath = Object.fromEntries((bad.body.issues as { path: string[]; code: string }[]).map((i) => [i.path.join('.'), i.code]));
  expect(byPath).to.deep.equal({ email: 'invalid_format', quantity: 'too_small', note: 'invalid_type' });
}

/** The S3 fixture's object key for the test, and the path S3 signs for it. */
export const S3_KEY = 'reports/2026 11.csv';
const S3_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

/** @aws-sdk/client-s3: a PutObject signed with SigV4 for the fixture's bucket, whose signature the test's own SigV4 gives too. */
export function expectSignedPut(res: Answer): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const signed = res.body as { method: string; hostname: string; path: string; query: Record<string, string>; headers: Record<string, string> };
  expect(signed).to.include({ method: 'PUT', hostname: 'fnhost-fixture.s3.eu-west-1.amazonaws.com', path: '/reports/2026%2011.csv' });
  const auth = parseAuthorization(signed.headers.authorization ?? '');
  expect(auth, signed.headers.authorization).to.not.equal(null);
  expect(auth).to.deep.include({ accessKeyId: 'AKIDEXAMPLE', region: 'eu-west-1', service: 's3' });
  expect(auth!.signedHeaders).to.include.members(['host', 'x-amz-date', 'x-amz-content-sha256']);
  expect(signed.headers['x-amz-content-sha256']).to.equal(createHash('sha256').update('hello from fnhost').digest('hex'));
  const signedAt = Date.parse(signed.headers['x-amz-date']!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
  expect(Math.abs(Date.now() - signedAt)).to.be.lessThan(15 * 60_000);
  expect(auth!.signature).to.equal(sigV4Signature(signed, S3_SECRET));
}
