#!/usr/bin/env python3
"""Runs MLX's Python tests (unittest, python/tests of an MLX checkout) against an `mlx` package built on metal2vk
(scripts/build-mlx.sh --python), one test file at a time, and reports pass/fail/skip per file.

    scripts/run_mlx_python_tests.py PACKAGE_DIR [--tests DIR] [--file test_x.py]... [--json FILE] [--jobs N]
                                    [--test-timeout S] [--file-timeout S] [--floor FILE] [--python EXE]

PACKAGE_DIR holds the package `mlx` (it goes on PYTHONPATH). Each file runs in its own process, which prints a line
as each test starts and ends: a test that crashes the process or runs past --test-timeout fails (named as such) and
the file's remaining tests go on in a new process, so one bad kernel does not hide the rest; past --file-timeout the
tests not yet run count as failed. --jobs N runs N files at a time (a machine with many cores); files are reported as
they finish, and --json is rewritten after each. The last line is `N passed, N failed` (tests; skipped ones are in neither).
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor, as_completed

# ---------------------------------------------------------------- the child: runs tests of one file, reports each
MARK = '@@mlxtest '


def child_main(module_name, skip_ids_file):
    import unittest
    done = set()
    if skip_ids_file:
        with open(skip_ids_file) as f:
            done = set(json.load(f))
    out = sys.__stdout__

    def emit(**record):
        out.write(MARK + json.dumps(record) + '\n')
        out.flush()

    def describe(err):
        exc_type, exc, _ = err
        return ('%s: %s' % (exc_type.__name__, exc)).strip()

    class StreamingResult(unittest.TestResult):
        """Reports each test's outcome as it happens; subtests fold into their test."""

        def startTest(self, test):
            super().startTest(test)
            self._failure = None
            self._skip = None
            emit(event='start', id=test.id())

        def _fail(self, test, err):
            if self._failure is None:
                self._failure = describe(err)

        def addError(self, test, err):
            super().addError(test, err)
            if isinstance(test, unittest.TestCase):
                self._fail(test, err)
            else:  # a class or module fixture failed: no startTest/stopTest comes for it
                emit(event='end', id=str(test), outcome='fail', detail=describe(err))

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._fail(test, err)

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None and self._failure is None:
                self._failure = '%s %s' % (subtest._subDescription(), describe(err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            if isinstance(test, unittest.TestCase):
                self._skip = reason
            else:  # a class or module fixture skipped its tests: no startTest/stopTest comes for it
                emit(event='end', id=str(test), outcome='skip', detail=reason)

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._failure = 'unexpected success (the test is marked as an expected failure)'

        def stopTest(self, test):
            super().stopTest(test)
            if self._failure is not None:
                emit(event='end', id=test.id(), outcome='fail', detail=self._failure)
            elif self._skip is not None:
                emit(event='end', id=test.id(), outcome='skip', detail=self._skip)
            else:
                emit(event='end', id=test.id(), outcome='pass')

    def flatten(suite):
        for item in suite:
            if isinstance(item, unittest.TestSuite):
                yield from flatten(item)
            else:
                yield item

    loaded = unittest.defaultTestLoader.loadTestsFromName(module_name)
    tests = [t for t in flatten(loaded) if t.id() not in done]
    emit(event='plan', ids=[t.id() for t in tests])
    unittest.TestSuite(tests).run(StreamingResult())
    emit(event='finished')
    # MLX's own runner clears its streams before exit (mlx_tests.MLXTestRunner).
    try:
        import mlx.core as mx
        mx.clear_streams()
    except Exception:
        pass
    out.flush()
    # Skip interpreter teardown: a crash in a destructor at exit is not a test's outcome.
    os._exit(0)


# ---------------------------------------------------------------- the parent
def signal_name(returncode):
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return 'signal %d' % -returncode
    return 'exit status %d' % returncode


def kill_group(proc):
    """Ends a test process and whatever it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_file(args, test_file, env):
    """Runs one test file (in as many processes as crashes need); returns an ordered {test id: (outcome, detail)}."""
    module = os.path.splitext(test_file)[0]
    results = OrderedDict()
    plan = None
    file_start = time.monotonic()
    log_tail = []
    while True:
        skip_file = None
        cmd = [args.python, os.path.abspath(__file__), '--child', module]
        if results:
            skip_file = os.path.join(args.work_dir, module + '.done.json')
            with open(skip_file, 'w') as f:
                json.dump(list(results), f)
            cmd += ['--skip-ids', skip_file]
        proc = subprocess.Popen(cmd, cwd=args.tests, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        current = None
        test_start = time.monotonic()
        finished = False
        killed_for = None
        buffer = b''
        while True:
            now = time.monotonic()
            if now - file_start > args.file_timeout:
                killed_for = 'file time limit (%d s) reached' % args.file_timeout
            elif current is not None and now - test_start > args.test_timeout:
                killed_for = 'timeout after %d s' % args.test_timeout
            if killed_for:
                kill_group(proc)
                break
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                proc.wait()
                break
            buffer += chunk
            while b'\n' in buffer:
                line, buffer = buffer.split(b'\n', 1)
                text = line.decode('utf-8', 'replace')
                if not text.startswith(MARK):
                    log_tail = (log_tail + [text])[-20:]
                    continue
                record = json.loads(text[len(MARK):])
                if record['event'] == 'plan':
                    if plan is None:
                        plan = record['ids']
                elif record['event'] == 'start':
                    current = record['id']
                    test_start = time.monotonic()
                    log_tail = []
                elif record['event'] == 'end':
                    results[record['id']] = (record['outcome'], record.get('detail', ''))
                    current = None
                elif record['event'] == 'finished':
                    finished = True
            if finished:  # what the process does after its last test is not a test's outcome
                kill_group(proc)
                break
        if finished:
            return results
        tail = ' | '.join(l for l in log_tail if l.strip())[-300:]
        if plan is None:  # the module did not even load
            why = killed_for or signal_name(proc.returncode)
            results[module] = ('fail', 'could not load the test file (%s): %s' % (why, tail))
            return results
        if current is not None:
            why = killed_for or ('crashed (%s)' % signal_name(proc.returncode))
            results[current] = ('fail', why + (': ' + tail if tail and not killed_for else ''))
        remaining = [t for t in plan if t not in results]
        if current is None and not killed_for:
            # Ended outside a test (a fixture or the module at import): running the rest again would end the same way.
            results[module + ' (outside a test)'] = ('fail', 'process ended (%s): %s'
                                                     % (signal_name(proc.returncode), tail))
            killed_for = 'the process ended outside a test'
        if current is None or (killed_for and killed_for.startswith('file time limit')):
            for test in remaining:
                results[test] = ('fail', 'not run: ' + killed_for)
            return results
        if not remaining:
            return results
        if not remaining:
            return results


REFUSED = re.compile(r"kernel '([^']+)' uses simdgroup functions and needs (\d+)-wide subgroups")


def failure_causes(report):
    """Failures grouped by cause: kernels the device refuses for their subgroup width (by kernel), and the rest."""
    refused = {}
    others = []
    for test_file, entry in report.items():
        for test in entry['tests']:
            if test['outcome'] != 'fail':
                continue
            match = REFUSED.search(test['detail'])
            if match:
                refused.setdefault(match.group(1), []).append(test['id'])
            else:
                others.append((test['id'], test['detail']))
    return refused, others


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        skip = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == '--skip-ids' else None
        return child_main(sys.argv[2], skip)

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('package_dir', help='the folder holding the package mlx (put on PYTHONPATH)')
    parser.add_argument('--tests', default=os.path.join(root, '..', 'shared', 'third_party', 'mlx', 'python', 'tests'),
                        help="MLX's python/tests folder (default: ../shared/third_party/mlx/python/tests)")
    parser.add_argument('--file', action='append', default=[], help='run only this test file (repeatable)')
    parser.add_argument('--json', help='write the per-test results here')
    parser.add_argument('--test-timeout', type=int, default=300, help='seconds one test may run (default 300)')
    parser.add_argument('--file-timeout', type=int, default=1200, help='seconds one file may run (default 1200)')
    parser.add_argument('--floor', help='a file of test ids (one a line, # comments) that must pass: the exit status '
                        'then says whether they all did (for a device that refuses some kernels, as lavapipe does); '
                        'without it, exit 0 only when no test fails')
    parser.add_argument('--jobs', type=int, default=1, help='test files run at a time (default 1)')
    parser.add_argument('--python', default='/usr/bin/python3' if os.path.exists('/usr/bin/python3')
                        else sys.executable, help='the interpreter the package was built for')
    args = parser.parse_args()
    args.package_dir = os.path.abspath(args.package_dir)
    args.tests = os.path.abspath(args.tests)
    if not os.path.isdir(os.path.join(args.package_dir, 'mlx')):
        sys.exit('%s: no package mlx in %s (scripts/build-mlx.sh --python builds it)' % (sys.argv[0],
                                                                                         args.package_dir))
    if not os.path.isdir(args.tests):
        sys.exit('%s: %s is not a folder of MLX Python tests' % (sys.argv[0], args.tests))
    files = args.file or sorted(f for f in os.listdir(args.tests) if f.startswith('test_') and f.endswith('.py'))
    args.work_dir = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'mlx-python-tests-%d' % os.getpid())
    os.makedirs(args.work_dir, exist_ok=True)

    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([args.package_dir, args.tests] +
                                        ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    env['PYTHONUNBUFFERED'] = '1'
    device = subprocess.run([args.python, '-c', 'import mlx.core as mx; print(mx.default_device(), '
                             'mx.device_info().get("device_name", "") if hasattr(mx, "device_info") else "")'],
                            env=env, capture_output=True, text=True)
    print('device: %s' % (device.stdout.strip() or device.stderr.strip()[-300:]), flush=True)

    totals = {'pass': 0, 'fail': 0, 'skip': 0}
    report = {}
    start = time.monotonic()
    def timed_run(test_file):
        file_start = time.monotonic()
        return run_file(args, test_file, env), time.monotonic() - file_start

    def write_json():
        with open(args.json, 'w') as f:
            json.dump({'device': device.stdout.strip(), 'seconds': round(time.monotonic() - start, 1),
                       'files': dict(sorted(report.items()))}, f, indent=1)

    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    runs = {pool.submit(timed_run, test_file): test_file for test_file in files}
    for run in as_completed(runs):  # reported as they finish; the JSON after each file, in file order
        test_file = runs[run]
        results, seconds = run.result()
        counts = {k: sum(1 for o, _ in results.values() if o == k) for k in totals}
        for k in totals:
            totals[k] += counts[k]
        report[test_file] = {'passed': counts['pass'], 'failed': counts['fail'], 'skipped': counts['skip'],
                             'seconds': round(seconds, 1),
                             'tests': [{'id': t, 'outcome': o, 'detail': d} for t, (o, d) in results.items()]}
        print('%-26s %4d passed, %3d failed, %3d skipped  (%.0f s)' % (test_file, counts['pass'], counts['fail'],
                                                                    counts['skip'], seconds), flush=True)
        for test, (outcome, detail) in results.items():
            if outcome == 'fail':
                print('    FAIL %s: %s' % (test, ' '.join(detail.split())[:300]), flush=True)
            elif outcome == 'skip' and detail:
                print('    SKIP %s: %s' % (test, ' '.join(detail.split())[:300]), flush=True)
        if args.json:
            write_json()
    refused, others = failure_causes(report)
    if refused:
        print('failed because the device refuses a kernel that needs wider subgroups: %d tests, %d kernels'
              % (sum(len(t) for t in refused.values()), len(refused)))
        for kernel, tests in sorted(refused.items(), key=lambda item: -len(item[1])):
            print('    %4d  %s' % (len(tests), kernel))
    if others:
        print('failed for other causes: %d tests (listed above)' % len(others))
    below = None
    if args.floor:
        with open(args.floor) as f:
            floor = [line.split('#')[0].strip() for line in f]
        floor = [test for test in floor if test]
        outcomes = {t['id']: t['outcome'] for entry in report.values() for t in entry['tests']}
        ran = [test for test in floor if test.split('.')[0] + '.py' in report]
        below = [test for test in ran if outcomes.get(test) != 'pass']
        for test in below:
            print('floor: %s %s' % (test, 'did not run' if test not in outcomes else 'failed'))
        print('floor: %d of %d floor tests passed' % (len(ran) - len(below), len(ran)))
    print('%d skipped, in %.0f s' % (totals['skip'], time.monotonic() - start))
    print('%d passed, %d failed' % (totals['pass'], totals['fail']))
    if below is not None:
        return 1 if below else 0
    return 1 if totals['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
