"""make-test-target: `make test` runs the tests (and fails when they fail); `make all` builds, then tests."""
import os
import shutil
import subprocess
import sys
import tempfile

ws = sys.argv[1]


def make(directory, *targets):
    proc = subprocess.run(["make", "-C", directory, *targets], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good")
    shutil.copytree(ws, good, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    code, out = make(good, "test")
    if code != 0 or "Ran 2 tests" not in out:
        sys.exit(f"`make test` does not run the 2 tests: exit {code}: {out[-300:]!r}")
    code, out = make(good, "-n", "all")
    if "compileall" not in out or "unittest" not in out or out.index("compileall") > out.index("unittest"):
        sys.exit(f"`make all` does not build and then test: {out[-300:]!r}")
    code, out = make(good, "build")
    if code != 0:
        sys.exit(f"`make build` broke: {out[-300:]!r}")
    bad = os.path.join(tmp, "bad")
    shutil.copytree(good, bad)
    with open(os.path.join(bad, "src", "calc.py")) as f:
        source = f.read()
    with open(os.path.join(bad, "src", "calc.py"), "w") as f:
        f.write(source.replace("return a + b", "return a - b"))
    for target in ("test", "all"):
        code, out = make(bad, target)
        if code == 0:
            sys.exit(f"`make {target}` succeeds although a test fails: {out[-300:]!r}")
print("ok")
