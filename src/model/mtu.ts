/**
 * Two MTUs that are easy to confuse:
 * - `l3` is the seed's `mtu`: the L3 packet budget; payload per packet = mtu - mtuOverheadBytes.
 * - `ib` is a RoCE port's IB MTU (256..4096, what ibv_devinfo calls active_mtu): payload per
 *   packet itself, so the L3 budget is ibMtu + mtuOverheadBytes.
 */
import type { ProviderProfile } from './provider.js';

export type Mtu = { readonly kind: 'l3'; readonly bytes: number } | { readonly kind: 'ib'; readonly bytes: number };

/** IBA enum ib_mtu: 256, 512, 1024, 2048, 4096 (IBV_MTU_256..IBV_MTU_4096 = 1..5). */
export const IB_MTUS = [256, 512, 1024, 2048, 4096] as const;

export class MtuError extends Error {
  override readonly name = 'MtuError';
}

export function payloadPerPacket(mtu: Mtu, profile: ProviderProfile): number {
  if (mtu.kind === 'ib') {
    if (!(IB_MTUS as readonly number[]).includes(mtu.bytes)) {
      throw new MtuError(`IB MTU must be one of ${IB_MTUS.join(', ')}, got ${mtu.bytes}`);
    }
    return mtu.bytes;
  }
  if (!Number.isInteger(mtu.bytes) || mtu.bytes <= profile.mtuOverheadBytes) {
    throw new MtuError(
      `MTU ${mtu.bytes} leaves no payload after ${profile.name}'s ${profile.mtuOverheadBytes}-byte per-packet overhead`,
    );
  }
  return mtu.bytes - profile.mtuOverheadBytes;
}

export const l3Mtu = (mtu: Mtu, profile: ProviderProfile): number =>
  mtu.kind === 'l3' ? mtu.bytes : mtu.bytes + profile.mtuOverheadBytes;
