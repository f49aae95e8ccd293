/** Child of memory.test.ts: fixAllocatorThresholds() in a process of its own (glibc's settings are process-wide). */
import { fixAllocatorThresholds } from '../../src/exporter/memory.js';

process.stdout.write(`${JSON.stringify({ fixed: fixAllocatorThresholds(), again: fixAllocatorThresholds() })}\n`);
