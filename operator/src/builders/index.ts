export { configMapFor, CODE_FILE_NAME } from './configmap.ts';
export { deploymentFor, memoryLimitMiB, runtimeEnv, RUNTIME_PORT, CODE_MOUNT_PATH } from './deployment.ts';
export { serviceFor, serviceUrl, SERVICE_PORT } from './service.ts';
export { cronJobFor, INVOKE_SCRIPT, JOB_NAME_LABEL, SCHEDULE_TOKEN_DIR, SCHEDULE_TOKEN_HEADER, SCHEDULED_TIME_HEADER } from './cronjob.ts';
export { secretFor, RUNTIME_TOKEN_KEY, SCHEDULE_TOKEN_KEY } from './secret.ts';
export { configHash, effectiveSpec } from './common.ts';
export type { EffectiveSpec } from './common.ts';
export { functionsNetworkPolicyFor, FUNCTIONS_NETWORK_POLICY_NAME } from './networkpolicy.ts';
