#!/usr/bin/env python3
"""ab_builds.py - two or more builds of kdsl timed in alternation, for a machine whose speed moves
between minutes (a shared VM), where runs of one build then the other compare the minutes, not the
builds.

  scripts/ab_builds.py snapshot DIR
      copies this checkout's build/src/libkdsl.so* and build/src/tools/kdsl-bench-engine into DIR
      (a build to compare: check out or edit, rebuild, snapshot again into another DIR).
  scripts/ab_builds.py run --build old=DIR --build new=DIR [--rounds N] [--kernel TEXT] -- ARGS...
      runs DIR/kdsl-bench-engine ARGS with DIR's libkdsl.so for each build, N rounds, the builds'
      order reversed every round, each build with a kernel cache of its own (a codegen change
      keeps the cache key of a kernel whose traced IR is the same), filled by a first run that is
      not counted, and KDSL_PROFILE=1; then prints,
      per build, each round's decode tok/s, prompt tok/s, mean launch (us) of every kernel whose
      name contains --kernel (all when not given) and the products table's GB/s from memory and
      from cache, with their median and best.

The kernels' headers are compiled into kdsl-bench-engine, the code generator into libkdsl.so:
a snapshot carries both, so either kind of change compares. Run from the repository root.
"""
import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def snapshot(directory):
    os.makedirs(directory, exist_ok=True)
    libs = [f for f in os.listdir('build/src') if f.startswith('libkdsl.so')]
    if not libs or not os.path.exists('build/src/tools/kdsl-bench-engine'):
        sys.exit('ab_builds.py: no build/src/libkdsl.so* or build/src/tools/kdsl-bench-engine here: build first, from the repository root')
    for f in libs:
        shutil.copy2(os.path.join('build/src', f), directory, follow_symlinks=False)
    shutil.copy2('build/src/tools/kdsl-bench-engine', directory)
    print(f'snapshot of {len(libs)} library files and kdsl-bench-engine in {directory}')


def parse(output, kernel_filter):
    """The figures one run printed, by name."""
    figures = {}
    for line in output.splitlines():
        # KDSL_PROFILE: launches, total ms, mean us, share, kernel
        m = re.match(r'^\s+\d+\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+%\s+(\S.*)$', line)
        if m and (kernel_filter is None or kernel_filter in m.group(2)):
            figures[f'launch us: {m.group(2)}'] = float(m.group(1))
            continue
        cells = [c.strip() for c in line.split('|')]
        if len(cells) < 5 or not cells[1] or cells[1].startswith('-'):
            continue
        number = lambda cell: re.match(r'^[0-9.]+$', cell) is not None
        # the engine table: model, decode tok/s, ..., prompt tok/s (last; '-' without a prompt)
        if number(cells[2]):
            figures[f'decode tok/s: {cells[1]}'] = float(cells[2])
            if number(cells[-2]):
                figures[f'prompt tok/s: {cells[1]}'] = float(cells[-2])
        # the products table: weights, bytes, time, achieved GB/s, bandwidth, fraction, from cache, from cache rate
        elif len(cells) >= 10 and cells[4].endswith('GB/s') and cells[8].endswith('GB/s'):
            figures[f'GB/s from memory: {cells[1]}'] = float(cells[4].split()[0])
            figures[f'GB/s from cache: {cells[1]}'] = float(cells[8].split()[0])
    return figures


def run(args):
    builds = []
    for b in args.build:
        name, _, directory = b.partition('=')
        binary = os.path.join(directory, 'kdsl-bench-engine')
        if not name or not os.path.exists(binary):
            sys.exit(f'ab_builds.py: --build {b}: expected NAME=DIR with DIR/kdsl-bench-engine (scripts/ab_builds.py snapshot DIR makes one)')
        builds.append((name, os.path.abspath(directory)))
    if len(builds) < 2:
        sys.exit('ab_builds.py: give at least two --build NAME=DIR')
    caches = tempfile.mkdtemp(prefix='kdsl-ab-')
    values = collections.defaultdict(lambda: collections.defaultdict(list))  # figure -> build -> per round

    def engine(name, directory, what):
        env = dict(os.environ, LD_LIBRARY_PATH=directory, KDSL_CACHE_DIR=os.path.join(caches, name), KDSL_PROFILE='1')
        done = subprocess.run([os.path.join(directory, 'kdsl-bench-engine'), *args.engine_args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f'ab_builds.py: build {name}, {what}: kdsl-bench-engine exited {done.returncode}:\n{done.stderr[-2000:]}')
        print(f'{what}: {name} done', file=sys.stderr, flush=True)
        return done.stdout + done.stderr

    # A first run of each build, not counted: it compiles the kernels into the build's cache, so
    # that no counted launch includes a compile.
    for name, directory in builds:
        engine(name, directory, 'warm-up')
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        for name, directory in order:
            for figure, value in parse(engine(name, directory, f'round {r + 1}'), args.kernel).items():
                values[figure][name].append(value)
    shutil.rmtree(caches, ignore_errors=True)
    higher_is_better = lambda figure: not figure.startswith('launch us')
    for figure in sorted(values):
        print(figure)
        for name, _ in builds:
            v = values[figure].get(name, [])
            if not v:
                print(f'  {name:>10}: (not printed)')
                continue
            best = max(v) if higher_is_better(figure) else min(v)
            print(f'  {name:>10}: median {statistics.median(v):10.2f}  best {best:10.2f}  rounds {", ".join(f"{x:.2f}" for x in v)}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    snap = sub.add_parser('snapshot', help='copy this build into DIR')
    snap.add_argument('directory')
    ab = sub.add_parser('run', help='time builds in alternation')
    ab.add_argument('--build', action='append', default=[], help='NAME=DIR, a snapshot (twice or more)')
    ab.add_argument('--rounds', type=int, default=4)
    ab.add_argument('--kernel', help='report only the kernels whose name contains this')
    ab.add_argument('engine_args', nargs=argparse.REMAINDER, help='-- then kdsl-bench-engine arguments')
    args = parser.parse_args()
    if args.command == 'snapshot':
        snapshot(args.directory)
        return
    if args.engine_args and args.engine_args[0] == '--':
        args.engine_args = args.engine_args[1:]
    if args.rounds < 1:
        sys.exit('ab_builds.py: --rounds must be at least 1')
    run(args)


if __name__ == '__main__':
    main()
