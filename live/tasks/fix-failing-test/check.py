"""fix-failing-test: the tests pass and are unchanged."""
import filecmp
import subprocess
import sys

ws, answer, original = sys.argv[1:4]
if not filecmp.cmp(f"{ws}/test_wordcount.py", f"{original}/test_wordcount.py", shallow=False):
    sys.exit("test_wordcount.py was changed")
proc = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=ws, capture_output=True, text=True, timeout=60)
if proc.returncode != 0:
    sys.exit(f"the tests still fail: {proc.stderr[-300:]}")
print("ok")
