import { describe, it, expect } from 'vitest';
import { readErrorText, statusError } from '../../src/reads/errors.js';
import { ERRNO } from '../../src/ffi/errno.js';

describe('ReadError text', () => {
  it('reads as the prefixed strings the logs, landing page and CLI show', () => {
    expect(readErrorText(statusError(-ERRNO.ENOENT, 'read', '/sys/x'))).toBe("ENOENT: read '/sys/x'");
    expect(readErrorText(statusError(-ERRNO.EACCES, 'open'))).toBe('EACCES: open');
    expect(readErrorText({ code: 'ETIMEDOUT', op: 'read', detail: 'read blocked for more than 500 ms' })).toBe('ETIMEDOUT: read blocked for more than 500 ms');
    expect(readErrorText({ code: 'errno 4095', op: 'submit', detail: 'the reader refused the request' })).toBe('errno 4095: the reader refused the request');
  });

  it('a project word is not an errno: its detail alone, with no code prefix', () => {
    expect(readErrorText({ code: 'NOTACOUNTER', op: 'read', detail: 'not a counter: "N/A (no PMA)"' })).toBe('not a counter: "N/A (no PMA)"');
    expect(readErrorText({ code: 'TOOLARGE', op: 'stat', path: '/f', detail: "'/f' is larger than 50 bytes" })).toBe("'/f' is larger than 50 bytes");
  });

  it('carries the errno name as its code, so nobody parses the text', () => {
    expect(statusError(-ERRNO.EISDIR, 'read', '/d')).toEqual({ code: 'EISDIR', op: 'read', path: '/d' });
    expect(statusError(-ERRNO.ENOENT, 'open')).toEqual({ code: 'ENOENT', op: 'open' });
  });
});
