// tenon's public API: the one import for apps, the demo, the CLI and other layers' users.
export * from './errors.js';
export * from './storage/index.js';
export * from './submit/index.js';
export * from './dataplane/index.js';
export * from './model/index.js';
export * from './session/index.js';
export { setWorkerBaseUrl, workerBaseUrl } from './worker-base.js';
export * from './train/index.js';
