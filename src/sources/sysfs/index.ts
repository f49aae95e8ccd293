/** sysfs measurement sources: port inventory, PMA counters/ and driver hw_counters/. */
export { SysfsInventory } from './inventory.js';
export {
  SysfsCountersSource,
  SysfsHwCountersSource,
  detectPmaWidth,
  hwCounterSpec,
  pmaCounterSpec,
  type PmaWidth,
} from './counters.js';
export { detectDriver, type RdmaDriver } from './driver.js';
export { parseRate, parseNumberedName, parseLinkLayer, roceActiveMtu, parseCounterText, type RoceMtuRule } from './parse.js';
export {
  DEFAULT_SYSFS_ROOT,
  SysfsNameError,
  isSafeName,
  isSafePortName,
  isSafePortNumber,
  type SysfsOptions,
} from './paths.js';
