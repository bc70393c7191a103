#!/usr/bin/env python3
"""Runs MLX's C++ tests (doctest) one test file at a time and reports pass/fail per file (scripts/test-mlx.sh).

A test case that crashes the process or runs past the time limit fails (named as such) and the file's remaining
cases run in a new process (doctest's --first), so one bad kernel does not hide the rest. The last line is
`N passed, N failed` (test cases).
"""
import argparse
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import OrderedDict

START = re.compile(r'<TestCase\s([^>]*?)(/?)>')
ATTR = re.compile(r'(\w+)="([^"]*)"')
RESULT = re.compile(r'<OverallResultsAsserts\s([^>]*?)/>')
EXPRESSION = re.compile(r'<Expression success="false"[^>]*?filename="([^"]*)" line="(\d+)"[^>]*>\s*'
                        r'<Original>\s*(.*?)\s*</Original>\s*(?:<Exception>\s*(.*?)\s*</Exception>)?', re.S)
EXCEPTION = re.compile(r'<Exception crash="(true|false)"[^>]*>\s*(.*?)\s*</Exception>', re.S)


def unescape(text):
    return (text.replace('&lt;', '<').replace('&gt;', '>').replace('&quot;', '"').replace('&apos;', "'")
            .replace('&amp;', '&'))


def list_cases(binary):
    out = subprocess.run([binary, '--list-test-cases', '--reporters=xml', '--no-skipped-summary'],
                         capture_output=True, text=True, check=True).stdout
    files = OrderedDict()
    for case in ET.fromstring(out).iter('TestCase'):
        files.setdefault(os.path.basename(case.get('filename')), []).append(unescape(case.get('name')))
    return files


def parse_run(text):
    """The test cases a (possibly cut short) XML stream started, in order: (name, passed or None, detail)."""
    cases = []
    starts = [m for m in START.finditer(text) if 'skipped="true"' not in m.group(1) and m.group(2) != '/']
    for i, m in enumerate(starts):
        attrs = dict(ATTR.findall(m.group(1)))
        body = text[m.end(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        result = RESULT.search(body)
        detail = ''
        failed_expr = EXPRESSION.search(body)
        exc = EXCEPTION.search(body)
        if failed_expr:
            detail = '%s:%s %s' % (os.path.basename(failed_expr.group(1)), failed_expr.group(2),
                                   unescape(failed_expr.group(3)))
            if failed_expr.group(4):  # the check's expression threw
                detail += ' threw: ' + unescape(failed_expr.group(4))
        if exc:
            detail = ('crash: ' if exc.group(1) == 'true' else 'exception: ') + unescape(exc.group(2))
        passed = None if not result else dict(ATTR.findall(result.group(1))).get('test_case_success') == 'true'
        cases.append((unescape(attrs.get('name', '?')), passed, ' '.join(detail.split())[:600]))
    return cases


def read_with_case_timeout(proc, timeout):
    """The process's output; kills it when one test case runs past `timeout` seconds (the clock restarts at each
    case a file's process starts, so a long file of quick cases is not cut short). Returns (text, timed_out)."""
    chunks, last_progress, cases_seen = [], time.time(), 0
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.time() - last_progress <= timeout:
            if not sel.select(timeout=1.0):
                continue
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                proc.wait()
                return b''.join(chunks).decode('utf-8', 'replace'), False
            chunks.append(data)
            started = b''.join(chunks).count(b'<TestCase ')
            if started != cases_seen:
                cases_seen, last_progress = started, time.time()
    os.killpg(proc.pid, signal.SIGKILL)
    chunks.append(proc.stdout.read())
    proc.wait()
    return b''.join(chunks).decode('utf-8', 'replace'), True


def run_file(binary, filename, expected, timeout):
    """Runs every case of one test file; returns [(name, passed, detail)] in file order."""
    results = []
    while len(results) < len(expected):
        cmd = ['stdbuf', '-oL', binary, '--source-file=*/' + os.path.basename(filename), '--reporters=xml', '--no-skipped-summary',
               '--first=%d' % (len(results) + 1)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        text, timed_out = read_with_case_timeout(proc, timeout)
        cases = parse_run(text)
        ended = 'timed out after %d s' % timeout if timed_out else 'process ended with status %d' % proc.returncode
        before = len(results)
        charged = False  # a case of this run was blamed for the process's end
        for name, passed, detail in cases:
            if passed is None:  # started, never finished: this case took the process down
                results.append((name, False, detail or ended))
                charged = True
                break
            results.append((name, passed, detail))
        if len(results) >= len(expected):
            break
        abnormal = timed_out or proc.returncode < 0
        if not abnormal:
            # A normal exit before the file's last case: doctest ran what it could see; the rest did not run.
            for name in expected[len(results):]:
                results.append((name, False, 'not run (%s)' % ended))
        elif not charged and (len(results) == before or not results[-1][2].startswith('crash')):
            # Died outside a reported crash: the next case is charged with it; the rest run anew.
            results.append((expected[len(results)], False, ended))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('binary', help="MLX's doctest binary (BUILD_DIR/tests/tests)")
    ap.add_argument('--timeout', type=int, default=int(os.environ.get('MLX_TEST_TIMEOUT', '900')),
                    help='seconds one test case may run (default 900, env MLX_TEST_TIMEOUT)')
    ap.add_argument('--file', action='append', help='only this test file (repeatable)')
    ap.add_argument('--json', help='write every case with its result here')
    ap.add_argument('--floor', help='a file of "TEST_FILE: CASE NAME" lines that must pass; with it the exit status '
                                    'is 0 when they all do (other failures are reported, not fatal)')
    args = ap.parse_args()

    files = list_cases(args.binary)
    total_pass = total_fail = 0
    record = {}
    start = time.time()
    for filename, names in files.items():
        if args.file and filename not in args.file:
            continue
        t0 = time.time()
        results = run_file(args.binary, filename, names, args.timeout)
        passed = sum(1 for _, ok, _ in results if ok)
        failed = len(results) - passed
        total_pass += passed
        total_fail += failed
        print('%s: %d passed, %d failed (%.0f s)' % (filename, passed, failed, time.time() - t0), flush=True)
        for name, ok, detail in results:
            if not ok:
                print('  FAILED %s: %s' % (name, detail), flush=True)
        record[filename] = [{'name': n, 'passed': ok, 'detail': d} for n, ok, d in results]
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'seconds': round(time.time() - start), 'files': record}, f, indent=1)
    if args.floor:
        # The floor's cases decide: the last line counts them; every case's tally comes before it.
        floor = [line for line in floor_cases(args.floor) if line.split(': ', 1)[0] in record]
        below = below_floor(args.floor, record)
        for line in below:
            print('below floor: %s' % line, flush=True)
        print('all cases: %d passed, %d failed; the floor (%s): %d cases' % (total_pass, total_fail, args.floor,
                                                                           len(floor)))
        print('%d passed, %d failed' % (len(floor) - len(below), len(below)))
        return 1 if below else 0
    print('%d passed, %d failed' % (total_pass, total_fail))
    return 0 if total_fail == 0 else 1


def floor_cases(path):
    """The "TEST_FILE: CASE NAME" lines of a floor file (comments after '#')."""
    with open(path) as f:
        return [ln.split('#', 1)[0].strip() for ln in f if ln.split('#', 1)[0].strip()]


def below_floor(path, record):
    """The floor's cases of the files that ran (`record`: file -> [{name, passed}]) that did not pass."""
    passed = {(f, c['name']) for f, cases in record.items() for c in cases if c['passed']}
    return [line for line in floor_cases(path)
            if line.split(': ', 1)[0] in record and tuple(line.split(': ', 1)) not in passed]


if __name__ == '__main__':
    sys.exit(main())
