// Per-function credentials are derived, not random (core/src/function-identity.ts
// says how and why); the gateway derives the same ones from the same key.
// Rotating the key rotates every token: the Secrets are re-applied and the pods
// roll, because the token Secret's hash is part of the pod template.
export { deriveToken, type TokenPurpose } from '@fnhost/core/function-identity.ts';
