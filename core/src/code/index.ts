// Content-addressed code (docs/gateway.md "The code store").
export * from './digest.ts';
export * from './errors.ts';
export * from './gc.ts';
export * from './bounds.ts';
export * from './receive.ts';
