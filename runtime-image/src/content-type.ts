// Content-Type values as Express 5 writes them: mime-types' `contentType` (a short name or extension
// → a type, a charset added where the database has one), content-type's parse/format for a charset.

import { http, mime } from './libraries.ts';

/**
 * What mime-types' `contentType` answers for the values `res.json`, `res.send` and `res.sendStatus`
 * set on every call, so that a handler using only those never loads the mime database
 * (test/runtime/content-type.unit.test.ts checks each against mime-types itself).
 */
export const COMMON_CONTENT_TYPES: ReadonlyMap<string, string> = new Map([
  ['application/json', 'application/json; charset=utf-8'],
  ['text/html', 'text/html; charset=utf-8'],
  ['text/plain', 'text/plain; charset=utf-8'],
  ['json', 'application/json; charset=utf-8'],
  ['html', 'text/html; charset=utf-8'],
  ['txt', 'text/plain; charset=utf-8'],
  ['bin', 'application/octet-stream'],
]);

/** mime-types' `contentType(value)`: false for an unknown extension. */
export function contentTypeOf(value: string): string | false {
  // A full type that names a charset is kept as it is: mime-types returns it unchanged.
  if (value.includes('/') && value.includes('charset')) return value;
  return COMMON_CONTENT_TYPES.get(value) ?? mime().mimeTypes.contentType(value);
}

/** Express's `res.type(type)` value: a type with "/" as given, else the extension's type (octet-stream when unknown). */
export function typeFromName(type: string): string {
  return type.includes('/') ? type : contentTypeOf(type) || 'application/octet-stream';
}

/** Express's utils.setCharset: the type with its charset parameter replaced (throws for a type content-type cannot parse). */
export function withCharset(type: string, charset: string): string {
  const parsed = http().contentType.parse(type);
  parsed.parameters.charset = charset;
  return http().contentType.format(parsed);
}

/** Express's utils.normalizeType, for res.format's keys: a type with "/" stripped of parameters, else the extension's type. */
export function normalizeType(key: string): string {
  if (key.includes('/')) {
    const semi = key.indexOf(';');
    return (semi === -1 ? key : key.slice(0, semi)).trim();
  }
  return mime().mimeTypes.lookup(key) || 'application/octet-stream';
}
