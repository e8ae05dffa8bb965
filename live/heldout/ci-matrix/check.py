"""ci-matrix: the workflow tests 3.11 and 3.12 (not 3.10); every other line of it is still there, in order."""
import re
import sys

ws, answer, original = sys.argv[1:4]
with open(f"{original}/.github/workflows/test.yml") as f:
    before = f.read().splitlines()
try:
    with open(f"{ws}/.github/workflows/test.yml") as f:
        after = f.read().splitlines()
except OSError as e:
    sys.exit(f"no workflow: {e}")
versions = set(re.findall(r"\b3\.1\d\b", "\n".join(after)))
if versions != {"3.11", "3.12"}:
    sys.exit(f"the workflow names Python {sorted(versions)}, want 3.11 and 3.12")
matrix = [line for line in after if re.search(r"3\.1\d", line)]
if not any("python-version" in line for line in matrix) and not any(
        re.search(r"python-version:\s*$", line) for line in after):
    sys.exit("the versions are not in the python-version matrix")
rest = iter(after)
for line in before:
    if "3.10" in line:
        continue
    if not any(line == other for other in rest):
        sys.exit(f"a line of the workflow changed or went missing: {line.strip()!r}")
with open(f"{original}/pyproject.toml") as f, open(f"{ws}/pyproject.toml") as g:
    if f.read() != g.read():
        sys.exit("pyproject.toml changed")
print("ok")
