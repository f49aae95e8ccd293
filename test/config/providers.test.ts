// User provider profiles: the transfer-model fields (issue 12) and the older messageHeaderBytes.
import { describe, it, expect } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from './problems.js';

const FILE = '/etc/mxl-fabric-exporter/config.yaml';
const profile = (line: string) => parseConfig(FILE, `providers:\n  - ${line}\n`).providers.get('p')!;
const problems = (line: string): string[] => configProblems(FILE, `providers:\n  - ${line}\n`);

describe('provider profiles', () => {
  it('inherit the transfer fields from their base and override them', () => {
    expect(profile('{ name: p, base: rdma_rocev2_mxl_v1 }')).toMatchObject({
      writeHeaderBytes: 16, immediateDataBytes: 4, txIovLimit: 4, acksPerMessage: 1, ackEveryPackets: 0, ackHeaderBytes: 4,
    });
    expect(profile('{ name: p, base: rdma_rocev2_mxl_v1, txIovLimit: 8, ackEveryPackets: 66, acksPerMessage: 0.5 }')).toMatchObject({
      txIovLimit: 8, ackEveryPackets: 66, acksPerMessage: 0.5,
    });
  });

  it('keep messageHeaderBytes meaning bytes on every write alike', () => {
    expect(profile('{ name: p, base: rdma_rocev2_mxl_v1, messageHeaderBytes: 20 }')).toMatchObject({ writeHeaderBytes: 20, immediateDataBytes: 0 });
    expect(problems('{ name: p, messageHeaderBytes: 20, writeHeaderBytes: 16 }')).toEqual([
      `${FILE}:2:36: providers[0].messageHeaderBytes: give writeHeaderBytes and immediateDataBytes, or the older messageHeaderBytes, not both`,
    ]);
  });

  it('name a bad field', () => {
    expect(problems('{ name: p, txIovLimit: -1 }')).toEqual([`${FILE}:2:28: providers[0].txIovLimit: -1 is out of range 0..65536`]);
    expect(problems('{ name: p, acksPerMessage: 2000 }')[0]).toMatch(/providers\[0\]\.acksPerMessage: acksPerMessage must be a number from 0 to 1024, got 2000$/);
  });
});
