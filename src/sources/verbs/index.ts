export * from './layout.js';
export * from './inventory.js';
