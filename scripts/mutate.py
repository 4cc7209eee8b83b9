#!/usr/bin/env python3
"""Mutation testing: does the suite fail when the code is wrong? (docs/RELIABILITY.md)

    scripts/mutate.py [--work DIR] [--only ID,ID...] tests/mutants/*.jsonl

Each line of a mutants file is one JSON object: `id`, `file` (relative to the repository root),
`old` (text that occurs exactly once in the file, or `occurrence`: which one, from 1), `new`
(what replaces it), and optionally `labels` (the ctest labels that run, a regex; by default by
the file's top-level folder) and `equivalent` (why the mutant cannot change what a test can
observe: its survival is expected).

The work happens in a clone at DIR/vtrace (default /tmp/vtrace-mutants), made on the first run
and reset to this repository's HEAD on every later one, built once in Release with warnings
not as errors (a mutant that only leaves a variable unused still compiles). For each mutant the
script replaces the text, builds, runs the labels' tests (stopping at the first failure, 120 s
each), and puts the file back. It prints one tab-separated line per mutant (id, file:line,
KILLED, SURVIVED, EQUIVALENT (it survived and says why it must), COMPILE_FAIL or NOT_FOUND,
seconds) and a summary. Exit 0 when no mutant survived that is not marked equivalent and every
mutant applied and compiled; 1 otherwise; 2 on bad usage.

Nothing here runs in `make test`: a full run of the committed mutants takes about two hours on
two cores (81 minutes for the first 370, about 55 for the 169 added after them). Never run it in
the repository itself: it edits the clone's files.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The tests that can see a change in a top-level folder (ctest labels, a regex): runtime/ every
# test but the two numerics sweeps (they take minutes), schema/ the layers above it and its own,
# any other folder the layers from the replayer up.
OTHER_LABELS = 'replayer_test|drift_test|cli_|golden|report_test|fuzz_regression_test|recorder_test'
SCHEMA_LABELS = 'schema_test|' + OTHER_LABELS
RUNTIME_EXCLUDED = 'runtime_numerics_test|runtime_cuda_arith_test'


def run(cmd, cwd, log=None, check=False):
    result = subprocess.run(cmd, cwd=cwd, stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    if check and result.returncode != 0:
        sys.exit(f'mutate: `{" ".join(cmd)}` failed in {cwd}')
    return result.returncode


def prepare(work: pathlib.Path) -> pathlib.Path:
    clone = work / 'vtrace'
    if not (clone / '.git').is_dir():
        work.mkdir(parents=True, exist_ok=True)
        run(['git', 'clone', '-q', str(ROOT), str(clone)], work, check=True)
    run(['git', 'fetch', '-q', str(ROOT), 'HEAD'], clone, check=True)
    run(['git', 'reset', '-q', '--hard', 'FETCH_HEAD'], clone, check=True)
    if not (clone / 'build' / 'build.ninja').exists():
        run(['cmake', '-S', '.', '-B', 'build', '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
             '-DVTRACE_WERROR=OFF'], clone, check=True)
    print('mutate: building the clone unchanged', file=sys.stderr)
    run(['cmake', '--build', 'build'], clone, check=True)
    return clone


def selection(mutant):
    if 'labels' in mutant:
        return ['-L', mutant['labels']]
    top = mutant['file'].split('/', 1)[0]
    if top == 'runtime':
        return ['-LE', RUNTIME_EXCLUDED]
    return ['-L', SCHEMA_LABELS if top == 'schema' else OTHER_LABELS]


def apply(clone, mutant):
    """The mutated text and the line it starts on, or None when `old` is not where it must be."""
    path = clone / mutant['file']
    if not path.is_file():
        return None
    source = path.read_text()
    old = mutant['old']
    occurrence = mutant.get('occurrence')
    if occurrence is None:
        if source.count(old) != 1:
            return None
        at = source.index(old)
    else:
        at = -1
        for _ in range(occurrence):
            at = source.find(old, at + 1)
            if at < 0:
                return None
    return source, source[:at] + mutant['new'] + source[at + len(old):], source.count('\n', 0, at) + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work', default='/tmp/vtrace-mutants')
    parser.add_argument('--only', default='', help='comma-separated mutant ids')
    parser.add_argument('mutants', nargs='+')
    args = parser.parse_args()
    mutants = []
    for name in args.mutants:
        try:
            text = pathlib.Path(name).read_text()
        except OSError as e:
            parser.exit(2, f'mutate: cannot read {name}: {e.strerror}\n')
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                m = json.loads(line)
            except json.JSONDecodeError as e:
                parser.exit(2, f'mutate: {name}:{number}: not JSON: {e}\n')
            if not all(k in m for k in ('id', 'file', 'old', 'new')):
                parser.exit(2, f'mutate: {name}:{number}: needs id, file, old and new\n')
            mutants.append(m)
    only = set(filter(None, args.only.split(',')))
    if only:
        unknown = only - {m['id'] for m in mutants}
        if unknown:
            parser.exit(2, f'mutate: no mutant {", ".join(sorted(unknown))}\n')
        mutants = [m for m in mutants if m['id'] in only]
    work = pathlib.Path(args.work)
    clone = prepare(work)
    logs = work / 'logs'
    logs.mkdir(exist_ok=True)
    counts = {}
    for m in mutants:
        started = time.time()
        applied = apply(clone, m)
        where = m['file']
        if applied is None:
            outcome = 'NOT_FOUND'
        else:
            original, mutated, line = applied
            where = f'{m["file"]}:{line}'
            path = clone / m['file']
            path.write_text(mutated)
            try:
                with open(logs / f'{m["id"]}.log', 'w') as log:
                    if run(['cmake', '--build', 'build'], clone, log) != 0:
                        outcome = 'COMPILE_FAIL'
                    else:
                        failed = run(['ctest', '--test-dir', 'build', '-j2', '--timeout', '120',
                                      '--stop-on-failure', '--output-on-failure', *selection(m)],
                                     clone, log)
                        outcome = 'KILLED' if failed else 'SURVIVED'
            finally:
                path.write_text(original)
            if outcome == 'SURVIVED' and m.get('equivalent'):
                outcome = 'EQUIVALENT'
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f'{m["id"]}\t{where}\t{outcome}\t{int(time.time() - started)}s', flush=True)
    # Leave the clone's build matching its sources.
    run(['cmake', '--build', 'build'], clone)
    print('mutate: ' + ', '.join(f'{n} {k.lower()}' for k, n in sorted(counts.items())),
          file=sys.stderr)
    bad = sum(counts.get(k, 0) for k in ('SURVIVED', 'COMPILE_FAIL', 'NOT_FOUND'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
