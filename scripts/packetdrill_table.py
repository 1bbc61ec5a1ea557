#!/usr/bin/env python3
"""Regenerate the results table of docs/packetdrill.md.

Runs every script of the behaviour directories of the upstream corpus and every script
of our own through `wirelab packetdrill` (via cargo), joins the results with the kernel's
(docs/packetdrill-kernel.json, from scripts/packetdrill_kernel.py) and the reasons in
crates/wirelab-packetdrill/tests/corpus-expected.tsv, and rewrites the part of
docs/packetdrill.md between the `<!-- table:begin -->` and `<!-- table:end -->` markers.

    scripts/packetdrill_table.py            # rewrite the table
    scripts/packetdrill_table.py --check    # exit 1 if results differ from the .tsv
    scripts/packetdrill_table.py --update   # also rewrite the .tsv's results (a changed
                                            # result, and an `open engine gap:` one, get a
                                            # reason derived from the message: edit it)

The corpus is ../shared/packetdrill beside the repository or $WIRELAB_PACKETDRILL_DIR.
"""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
DIRS = ['blocking', 'close', 'cubic', 'cwnd_moderation', 'ecn', 'fast_recovery', 'fast_retransmit',
        'limited_transmit', 'mss', 'mtu_probe', 'nagle', 'sack', 'shutdown', 'slow_start', 'tcp_info',
        'ts_recent', 'user_timeout', 'validate']
# our own scripts: this crate's and the TCP engine's ECN scripts
OWN_DIRS = [os.path.join(ROOT, 'crates', 'wirelab-packetdrill', 'scripts'),
            os.path.join(ROOT, 'crates', 'wirelab-tcp', 'tests', 'packetdrill')]
TSV = os.path.join(ROOT, 'crates', 'wirelab-packetdrill', 'tests', 'corpus-expected.tsv')
DOC = os.path.join(ROOT, 'docs', 'packetdrill.md')
KERNEL = os.path.join(ROOT, 'docs', 'packetdrill-kernel.json')


def corpus():
    d = os.environ.get('WIRELAB_PACKETDRILL_DIR')
    cands = [d] if d else [os.path.join(a, 'shared', 'packetdrill')
                           for a in [os.path.dirname(ROOT), os.path.dirname(os.path.dirname(ROOT))]]
    for c in cands:
        if c and os.path.isdir(os.path.join(c, 'gtests', 'net', 'tcp')):
            return c
    sys.exit('packetdrill corpus not found: set WIRELAB_PACKETDRILL_DIR')


def scripts():
    tcp = os.path.join(corpus(), 'gtests', 'net', 'tcp')
    out = []
    for d in DIRS:
        for f in sorted(os.listdir(os.path.join(tcp, d))):
            if f.endswith('.pkt'):
                out.append((f'{d}/{f}', os.path.join(tcp, d, f)))
    own = sorted((f, d) for d in OWN_DIRS for f in os.listdir(d) if f.endswith('.pkt'))
    for f, d in own:
        out.append((f'own/{f}', os.path.join(d, f)))
    return out


def run_wirelab(paths):
    with tempfile.TemporaryDirectory() as t:
        j = os.path.join(t, 'r.json')
        cmd = ['cargo', 'run', '-q', '-p', 'wirelab-cli', '--', 'packetdrill', '--json', j] + paths
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return {r['path']: r for r in json.load(open(j))}


def expected():
    m = {}
    for line in open(TSV):
        if not line.strip() or line.startswith('#'):
            continue
        cols = line.rstrip('\n').split('\t')
        m[cols[0]] = (cols[1], cols[2] if len(cols) > 2 else '')
    return m


def derive_why(status, message):
    if status == 'pass':
        return ''
    first = message.splitlines()[0] if message else ''
    # drop `script.pkt:LINE: `
    parts = first.split(': ', 1)
    if len(parts) == 2 and ':' in parts[0]:
        first = parts[1]
    return first if status == 'unsupported' else f'open engine gap: {first}'


def write_tsv(sc, exp):
    head = [l for l in open(TSV) if l.startswith('#')]
    lines = []
    for key, _ in sc:
        st, why = exp[key]
        lines.append(f'{key}\t{st}' + (f'\t{why}' if why else '') + '\n')
    open(TSV, 'w').write(''.join(head + lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--check', action='store_true')
    ap.add_argument('--update', action='store_true')
    a = ap.parse_args()
    sc = scripts()
    res = run_wirelab([p for _, p in sc])
    exp = expected()
    kern = {e['path']: e for e in json.load(open(KERNEL))['scripts']}
    mism = []
    rows = []
    n_kpass = n_both = 0  # behaviour directories
    o_kpass = o_both = 0  # our own scripts
    causes = {}
    for key, path in sc:
        r = res.get(path, {'status': 'MISSING', 'message': ''})
        got = r['status'].lower()
        want, why = exp.get(key, ('(not listed)', ''))
        if a.update and (got != want or why.startswith('open engine gap:')):
            exp[key] = (got, derive_why(got, r['message']))
            want, why = exp[key]
        if got != want:
            mism.append(f'{key}: expected {want}, got {got}: {r["message"].splitlines()[0] if r["message"] else ""}')
        k = kern.get(key)
        if k is None:
            kcell = 'not run'
        else:
            runs = len(k['rc'])
            kcell = {'pass': f'pass ({runs}/{runs})', 'fail': f'fail ({runs}/{runs})',
                     'flaky': f'flaky ({sum(rc == 0 for rc in k["rc"])}/{runs} pass)'}[k['result']]
            if k['result'] != 'pass' and k.get('first_failure'):
                kcell += '¹'
        if k is not None and k['result'] == 'pass':
            if key.startswith('own/'):
                o_kpass += 1
                o_both += got == 'pass'
            else:
                n_kpass += 1
                n_both += got == 'pass'
                if got != 'pass':
                    cause = why.split(':')[0].split(' (')[0]
                    causes.setdefault(cause, []).append(key)
        wcell = {'pass': 'pass', 'fail': '**fail**', 'unsupported': 'unsupported', 'parse_error': 'parse error'}.get(got, got)
        rows.append(f'| `{key}` | {kcell} | {wcell} | {why} |')
    foot = ['', '¹ The kernel\'s first failure, per script:', '']
    for key, _ in sc:
        k = kern.get(key)
        if k and k['result'] != 'pass':
            foot.append(f'- `{key}`: `{k["first_failure"]}`')
    ratio = 100.0 * n_both / max(n_kpass, 1)
    n_own = sum(1 for k, _ in sc if k.startswith('own/'))
    summary = (f'**{n_both} of the {n_kpass} scripts of the behaviour directories that pass on the kernel '
               f'pass on wirelab ({ratio:.0f} %; the issue\'s target of ≥ 90 % is '
               f'{"met" if ratio >= 90 else "not met"}).** Our own scripts: {o_both} of the {o_kpass} that pass '
               f'on the kernel. {len(sc)} scripts in all ({n_own} of our own).')
    why_not = [f'- {c}: ' + ', '.join(f'`{x}`' for x in sorted(v)) for c, v in sorted(causes.items())]
    table = '\n'.join(['<!-- table:begin (generated by scripts/packetdrill_table.py; do not edit) -->', '',
                       summary, '', 'Kernel passes that wirelab does not pass, by cause:', ''] + why_not +
                      ['', '| script | Linux 6.18 (runs) | wirelab `linux-6` | why (the cause; for a pass, the fix it needed) |',
                       '|---|---|---|---|'] + rows + foot + ['', '<!-- table:end -->'])
    if a.update:
        write_tsv(sc, exp)
    if a.check:
        if mism:
            print('\n'.join(mism))
            sys.exit(1)
        print(summary)
        return
    doc = open(DOC).read()
    b, e = doc.index('<!-- table:begin'), doc.index('<!-- table:end -->') + len('<!-- table:end -->')
    open(DOC, 'w').write(doc[:b] + table + doc[e:])
    print(summary)
    if mism:
        print('results that differ from corpus-expected.tsv:\n' + '\n'.join(mism))


if __name__ == '__main__':
    main()
