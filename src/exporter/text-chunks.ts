/** Text written into buffers of about `size` bytes each, never copied into one. */
export class TextChunks {
  private readonly chunks: Buffer[] = [];
  private buf: Buffer | undefined;
  private at = 0;

  constructor(private readonly size: number) {}

  write(s: string): void {
    const n = Buffer.byteLength(s);
    if (this.buf === undefined || this.at + n > this.buf.length) {
      this.flush();
      this.buf = Buffer.allocUnsafeSlow(Math.max(this.size, n));
    }
    this.at += this.buf.write(s, this.at);
  }

  /** The chunks; the last one copied to its length when it fills less than half its buffer (kept memory). */
  end(): Buffer[] {
    this.flush();
    return this.chunks;
  }

  private flush(): void {
    if (this.buf === undefined || this.at === 0) return;
    this.chunks.push(this.at < this.buf.length / 2 ? Buffer.from(this.buf.subarray(0, this.at)) : this.buf.subarray(0, this.at));
    this.buf = undefined;
    this.at = 0;
  }
}
