#!/usr/bin/env python3
"""Cold start of `runner run` from a warm cache, binaries interleaved.

usage: scripts/coldbench.py N WASM NAME=BINARY [NAME=BINARY ...]

Each binary gets its own data directory (/tmp/coldbench-NAME), filled by one
run first; then N rounds run every binary once (the order alternated each
round) as `echo hi | BINARY run WASM --input - --data-dir DIR --log-level
error`, timing the wall clock and the child's user + system CPU (wait4).
Prints the sorted samples, the medians and the ratios to the first binary.
NAME=BINARY@OTHER.wasm runs that binary on another module (the floor of
internal/bench/cmd/coldfloor on the prepared module, say).
See docs/design/cold-start.md.
"""
import os, subprocess, sys, time, statistics, shutil
# usage: coldbench.py N wasm name=binary ...
n = int(sys.argv[1]); wasm = sys.argv[2]
bins = [a.split('=',1) for a in sys.argv[3:]]
def run(b, d):
    b, _, w = b.partition('@')
    t0 = time.perf_counter()
    p = subprocess.Popen([b, 'run', w or wasm, '--input', '-', '--data-dir', d, '--log-level', 'error'],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(b'hi\n'); p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    assert status == 0, p.stderr.read()
    return wall, (ru.ru_utime + ru.ru_stime) * 1000
res = {name: ([], []) for name, _ in bins}
for name, b in bins:
    d = '/tmp/coldbench-' + name
    shutil.rmtree(d, ignore_errors=True); os.makedirs(d, 0o700)
    run(b, d)  # fills the caches
for i in range(n):
    order = bins if i % 2 == 0 else bins[::-1]
    for name, b in order:
        w, c = run(b, '/tmp/coldbench-' + name)
        res[name][0].append(w); res[name][1].append(c)
base = bins[0][0]
for name, _ in bins:
    w, c = res[name]
    print(f"{name}: wall ms sorted {' '.join('%.0f'%x for x in sorted(w))} median {statistics.median(w):.1f}; "
          f"CPU ms sorted {' '.join('%.0f'%x for x in sorted(c))} median {statistics.median(c):.1f}")
for name, _ in bins[1:]:
    print(f"{name}/{base}: wall {statistics.median(res[name][0])/statistics.median(res[base][0]):.2f}x, CPU {statistics.median(res[name][1])/statistics.median(res[base][1]):.2f}x")
