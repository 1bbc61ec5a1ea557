#!/usr/bin/env python3
"""Run the packetdrill corpus on this machine's kernel and record the results.

Usage (root, /dev/net/tun; see ../shared/packetdrill/PACKETDRILL-HERE.md):
    scripts/packetdrill_kernel.py [--runs N] [--out docs/packetdrill-kernel.json] RESULT.json...
    scripts/packetdrill_kernel.py --run 3   # needs PACKETDRILL_TREE (a built copy of the tree)

Our own scripts are included by passing their paths to run-on-kernel.py, e.g.
    run-on-kernel.py own.json ipv4 $PWD/crates/wirelab-packetdrill/scripts/*.pkt
and `--update` replaces just the scripts in the given results, keeping the others:
    scripts/packetdrill_kernel.py --update own1.json own2.json own3.json

Each RESULT.json is what ../shared/packetdrill/run-on-kernel.py writes (one run). The
merged file keeps, per script (path relative to gtests/net/tcp): the exit codes of every
run, the overall result (pass: every run passed; fail: none did; flaky: mixed) and the
first failure line of the first failing run, so docs/packetdrill.md can be regenerated
by scripts/packetdrill_table.py without rerunning the kernel.
"""
import argparse, json, os, platform, re, subprocess, sys, tempfile

def first_failure(out):
    for line in out.splitlines():
        if re.match(r'^[\w.+-]+\.pkt:\d+: ', line) or 'error executing' in line:
            return line.strip()
    return out.strip().splitlines()[-1] if out.strip() else ''

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('results', nargs='*', help='run-on-kernel.py output files (one per run)')
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'docs', 'packetdrill-kernel.json'))
    ap.add_argument('--run', type=int, default=0, metavar='N',
                    help='run the corpus N times now (needs PACKETDRILL_TREE: a built copy of ../shared/packetdrill)')
    ap.add_argument('--update', action='store_true',
                    help='keep the scripts of the existing --out file that the results do not cover')
    a = ap.parse_args()
    files = list(a.results)
    if a.run:
        tree = os.environ.get('PACKETDRILL_TREE')
        if not tree:
            sys.exit('--run needs PACKETDRILL_TREE (a copy of ../shared/packetdrill with packetdrill built)')
        for _ in range(a.run):
            f = tempfile.mktemp(suffix='.json')
            subprocess.run([os.path.join(tree, 'run-on-kernel.py'), f, 'ipv4'], check=True)
            files.append(f)
    merged = {}
    for f in files:
        for r in json.load(open(f)):
            # our own scripts (crates/wirelab-packetdrill/scripts) are listed as own/NAME
            # and so are the TCP engine's ECN scripts (crates/wirelab-tcp/tests/packetdrill)
            own = 'wirelab-packetdrill/scripts/' in r['path'] or 'wirelab-tcp/tests/packetdrill/' in r['path']
            key = 'own/' + os.path.basename(r['path']) if own else r['rel']
            e = merged.setdefault(key, {'path': key, 'rc': [], 'first_failure': ''})
            e['rc'].append(r['rc'])
            if r['rc'] != 0 and not e['first_failure']:
                e['first_failure'] = first_failure(r['out'])
    for e in merged.values():
        ok = [rc == 0 for rc in e['rc']]
        e['result'] = 'pass' if all(ok) else ('fail' if not any(ok) else 'flaky')
    if a.update and os.path.exists(a.out):
        for e in json.load(open(a.out))['scripts']:
            merged.setdefault(e['path'], e)
    doc = {
        'kernel': platform.release(),
        'variant': 'ipv4',
        'note': 'rc per run; pass = every run passed. Produced by scripts/packetdrill_kernel.py',
        'scripts': sorted(merged.values(), key=lambda e: e['path']),
    }
    with open(a.out, 'w') as fh:
        json.dump(doc, fh, indent=1)
        fh.write('\n')
    print(f"{a.out}: {len(merged)} scripts, {sum(e['result'] == 'pass' for e in merged.values())} pass")

if __name__ == '__main__':
    main()
