/**
 * The one encoding of a composite key (a Map or Set key made of several names): the parts
 * joined with '/', as a port is written everywhere ("mlx5_0/1", portKey()). Unambiguous for the
 * parts it is given: device and netdev names never hold a '/' (the kernel's dev_valid_name()
 * refuses it; they are sysfs directory names), ports are numbers, and sources, layers and
 * directions are the exporter's own words. A part that may hold '/' (a flow id from a config)
 * goes last, where it cannot be taken for another part; a path does not go into one.
 */
export const key = (...parts: readonly (string | number)[]): string => parts.join('/');

/** The parts of a key() again, as strings. */
export const keyParts = (k: string): string[] => k.split('/');
