"""What the bench scripts' tests (test_*.py beside it) share: a line per check and a count of the failures, the tool
under test run as a child process with Python's warnings as errors, and the exit status. Standard library only."""
import subprocess
import sys

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def run(tool, *args):
    """The tool's exit status, standard output and standard error."""
    p = subprocess.run([sys.executable, "-W", "error", tool, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def finish():
    print("%d failed" % failures)
    sys.exit(1 if failures else 0)
