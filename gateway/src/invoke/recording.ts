import type { Readable } from 'node:stream';
import { recordRequest, recordResponse, type RecordedExchange, type RecordedRequest, type RecordedResponse, type RequestRecording } from '@fnhost/core';

// Request recording on the invocation path (docs/replay.md): for a function
// with record_requests on, what the caller sent and what it got, masked by
// the function's policy (core/src/recording.ts), handed to the log record.
// A function with recording off costs one property read per call.

/** What an execution records, kept on its Exchange until its record is written. */
export interface ExchangeRecording {
  settings: RequestRecording;
  request: RecordedRequest | undefined;
  response: RecordedResponse | null;
}

/** The recording of a call to a function, or undefined when it records nothing. */
export function startRecording(fn: { record_requests?: RequestRecording }): ExchangeRecording | undefined {
  const settings = fn.record_requests;
  return settings?.enabled === true ? { settings, request: undefined, response: null } : undefined;
}

export function noteRequest(rec: ExchangeRecording, method: string, pathAndQuery: string, headers: Record<string, string | string[] | undefined>, body: Buffer | null): void {
  rec.request = recordRequest(method, pathAndQuery, headers, body, rec.settings);
}

export function noteResponse(rec: ExchangeRecording, status: number, headers: Record<string, string | string[] | undefined>, body: Buffer | null, fullSize?: number): void {
  rec.response = recordResponse(status, headers, body, rec.settings, fullSize);
}

/**
 * A streamed answer: its first max_body_bytes are copied as they pass (the
 * stream itself is not slowed or held), and the response noted when it ends.
 * `size` counts every byte, so a cut body says how long it was.
 */
export function noteStreamedResponse(rec: ExchangeRecording, status: number, headers: Record<string, string | string[] | undefined>, body: Readable, head?: Buffer): () => void {
  const limit = rec.settings.max_body_bytes;
  const chunks: Buffer[] = [];
  let kept = 0;
  let size = 0;
  const take = (chunk: Buffer) => {
    size += chunk.length;
    if (kept < limit) {
      const part = chunk.subarray(0, limit - kept);
      chunks.push(part);
      kept += part.length;
    }
  };
  if (head !== undefined) take(head);
  body.on('data', take);
  return () => {
    noteResponse(rec, status, headers, Buffer.concat(chunks), size);
  };
}

export function recordedExchange(rec: ExchangeRecording | undefined): RecordedExchange | undefined {
  return rec?.request === undefined ? undefined : { request: rec.request, response: rec.response };
}
