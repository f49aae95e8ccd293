/** A port and a direction: the names every layer shares (a leaf: config, model and sources import it). */
import { key } from './keys.js';

export type Direction = 'tx' | 'rx';
export const DIRECTIONS: readonly Direction[] = ['tx', 'rx'];

export interface PortRef {
  readonly device: string;
  readonly port: number;
}

/** "mlx5_0/1": the one key a port goes by in maps, logs and messages. */
export const portKey = (p: PortRef): string => key(p.device, p.port);
