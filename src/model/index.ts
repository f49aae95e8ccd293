export * from './rational.js';
export * from './media.js';
export * from './provider.js';
export * from './mtu.js';
export * from './bandwidth.js';
export * from './transfer.js';
export * from './ring.js';
