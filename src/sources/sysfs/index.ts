/** sysfs measurement sources: port inventory, PMA counters/ and driver hw_counters/. */
export { SysfsInventory } from './inventory.js';
export {
  SysfsCountersSource,
  SysfsHwCountersSource,
} from './counters.js';
export {
  DEFAULT_SYSFS_ROOT,
  isSafeName,
} from './paths.js';
