#!/usr/bin/env python3
"""The closed loop over seeds: run WORKLOAD on MACHINE traced with its
syscalls, replay that trace causally on the same machine and seed, and
print each seed's switches recorded and replayed and the relative errors.

Usage: scripts/closed-loop.py BIN WORKLOAD FIRST_SEED N [FLAGS...]
  e.g. scripts/closed-loop.py target/release/schedlab hackbench:groups=1,loops=20 1 8 --set noise.enabled=false
FLAGS go to both the run and the replay. MACHINE is vm-2 unless FLAGS
name one (--machine M)."""
import json, os, subprocess, sys, tempfile

b, w, first, n, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
machine = [] if '--machine' in flags else ['--machine', 'vm-2']
d = tempfile.mkdtemp()
trace, out = os.path.join(d, 't.txt'), os.path.join(d, 'r.json')
for seed in range(first, first + n):
    s = ['--seed', str(seed)] + machine + flags
    subprocess.run([b, 'run', '-w', w, '--trace', trace, '--trace-syscalls', '-q'] + s,
                   check=True, capture_output=True)
    subprocess.run([b, 'replay', trace, '--fidelity', '--json', out, '-q'] + s,
                   check=True, capture_output=True)
    t = json.load(open(out))['benchmark']['replay']['fidelity']['total']
    e = t['relative_error']
    print(f"seed {seed}: switches {t['recorded']['switches']} / {t['simulated']['switches']}"
          f" ({e['switches'] * 100:+.0f} %), CPU {e['runtime'] * 100:+.0f} %, wait {e['wait'] * 100:+.0f} %")
