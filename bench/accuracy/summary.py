#!/usr/bin/env python3
"""Summarizes hostsweep.sh's run folders (<dataset>-<model>-s<seed>[-<flags>]/sweep.json) under
the folder given (default: the current one): per setting, the fp32 test accuracy (mean ± std over
the seeds, and each seed's), then each width's QAT accuracy and its delta from fp32 with the
seeds whose own delta misses issue 18's target, and the fp32 training seconds."""
import glob, json, os, re, statistics as st, sys

TARGET = {8: -0.3, 4: -1.0, 2: -3.0, 1: -6.0}


def ms(v):
    return st.mean(v), (st.stdev(v) if len(v) > 1 else 0.0)


def main(root):
    runs = {}
    for d in sorted(glob.glob(os.path.join(root, '*-s[0-9]*'))):
        p = os.path.join(d, 'sweep.json')
        name = os.path.basename(d)
        if not os.path.exists(p):
            print('unfinished:', name)
            continue
        rep = json.load(open(p))
        seed = int(re.search(r'-s(\d+)', name).group(1))
        runs.setdefault(re.sub(r'-s\d+', '', name, count=1), []).append((seed, rep))
    for key, rs in runs.items():
        rs.sort(key=lambda x: x[0])
        fp = [100 * r['rows'][0]['accuracy'] for _, r in rs]
        m, s = ms(fp)
        secs = ' '.join('%.0f' % r['rows'][0]['train_seconds'] for _, r in rs)
        print(f"{key} (seeds {','.join(str(x) for x, _ in rs)}; {rs[0][1]['nodes']} nodes)")
        print(f"  fp32 {m:.2f} ± {s:.2f}  per seed {' '.join('%.2f' % x for x in fp)}  fp32 train s {secs}")
        for i, row in enumerate(rs[0][1]['rows'][1:], 1):
            b = row['bits']
            q = [100 * r['rows'][i]['accuracy'] for _, r in rs]
            qm, qs = ms(q)
            deltas = [a - f for a, f in zip(q, fp)]
            t = TARGET.get(b)
            below = sum(1 for x in deltas if t is not None and x < t)
            ok = '' if t is None else (' met' if qm - m >= t else ' MISSED')
            print(f"  {b:>2} bits {qm:.2f} ± {qs:.2f}  delta {qm - m:+.2f}{ok}"
                  + ('' if t is None else f" (target {t:+.1f}; {below} of {len(q)} seeds below)")
                  + f"  per seed {' '.join('%+.2f' % x for x in deltas)}")


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else '.')
