/** Types of hungfs.mjs (a FUSE mount whose listing never returns). */
export function hungfsMissing(): string[];
export function mountHungfs(): Promise<{ readonly mountpoint: string; unmount(): Promise<void> }>;
