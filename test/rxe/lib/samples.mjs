// The labelled samples of a Prometheus text exposition, for the guest checks that read saved scrapes.
export function samples(text) {
  return text.split('\n').flatMap((line) => {
    const m = /^([a-z_:]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m) return [];
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    return [{ name: m[1], labels, value: Number(m[3]) }];
  });
}
