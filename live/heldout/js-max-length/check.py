"""js-max-length: slugify(text, maxLength) cuts without a trailing dash; a new test covers it and catches
a slugify that ignores maxLength; the old tests still pass."""
import os
import shutil
import subprocess
import sys
import tempfile

ws, answer, original = sys.argv[1:4]
PROBE = r"""
const { slugify } = require(process.argv[1]);
const cases = [[['Hello World'], 'hello-world'], [['Hello World Again', 12], 'hello-world'],
               [['Hello World Again', 11], 'hello-world'], [['abc', 10], 'abc'], [['Rust & Go!', 4], 'rust']];
for (const [args, want] of cases) {
  const got = slugify(...args);
  if (got !== want) { console.log(`slugify(${JSON.stringify(args).slice(1, -1)}) = ${JSON.stringify(got)}, want ${JSON.stringify(want)}`); process.exit(1); }
}
"""


def node_tests(directory):
    proc = subprocess.run(["node", "--test"], cwd=directory, capture_output=True, text=True, timeout=60)
    return proc.returncode == 0, (proc.stdout + proc.stderr)[-300:]


proc = subprocess.run(["node", "-e", PROBE, os.path.join(os.path.abspath(ws), "slug.js")], capture_output=True,
                      text=True, timeout=60)
if proc.returncode != 0:
    sys.exit(f"{(proc.stdout + proc.stderr).strip()[-300:]}")
with open(f"{ws}/slug.test.js") as f:
    tests = f.read()
with open(f"{original}/slug.test.js") as f:
    old = f.read()
for line in old.splitlines():
    if "assert" in line and line not in tests:
        sys.exit(f"an old test is gone: {line.strip()}")
ok, out = node_tests(ws)
if not ok:
    sys.exit(f"node --test fails: {out!r}")
with tempfile.TemporaryDirectory() as tmp:
    shutil.copy(f"{ws}/slug.test.js", tmp)
    shutil.copy(f"{original}/slug.js", tmp)
    shutil.copy(f"{original}/package.json", tmp)
    if node_tests(tmp)[0]:
        sys.exit("the tests pass on a slugify that ignores maxLength (no test of it)")
print("ok")
