"""missing-test: the new tests pass on clamp, and catch two broken versions of it."""
import os
import shutil
import subprocess
import sys
import tempfile

ws = sys.argv[1]


def tests_pass(directory):
    proc = subprocess.run([sys.executable, "-m", "unittest", "-q", "test_mathutil"], cwd=directory,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode == 0, proc.stderr[-300:]


with open(os.path.join(ws, "test_mathutil.py")) as f:
    tests = f.read()
if "clamp" not in tests:
    sys.exit("test_mathutil.py does not mention clamp")
if "test_mean" not in tests:
    sys.exit("the existing mean tests are gone")
ok, err = tests_pass(ws)
if not ok:
    sys.exit(f"the tests fail on the correct clamp: {err}")
mutants = {"no clamping": "return x", "no upper bound": "return max(lo, x)", "no lower bound": "return min(x, hi)"}
for what, body in mutants.items():
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(ws, "test_mathutil.py"), tmp)
        with open(os.path.join(ws, "mathutil.py")) as f:
            source = f.read().replace("return max(lo, min(x, hi))", body)
        with open(os.path.join(tmp, "mathutil.py"), "w") as f:
            f.write(source)
        if tests_pass(tmp)[0]:
            sys.exit(f"the tests do not notice a clamp with {what}")
print("ok")
