export * from './layout.js';
export * from './native.js';
export * from './inventory.js';
