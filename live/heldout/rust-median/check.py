"""rust-median: the crate's tests pass unchanged, and so do more cases of median (in a copy)."""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

ws, answer, original = sys.argv[1:4]
HIDDEN = """use stats::median;

#[test]
fn more_medians() {
    assert_eq!(median(&[10, 20]), Some(15.0));
    assert_eq!(median(&[7]), Some(7.0));
    assert_eq!(median(&[6, 2, 9, 1, 4, 8]), Some(5.0));
    assert_eq!(median(&[3, 1, 2, 5, 4]), Some(3.0));
}
"""
if not filecmp.cmp(f"{ws}/tests/stats.rs", f"{original}/tests/stats.rs", shallow=False):
    sys.exit("tests/stats.rs was changed")
with tempfile.TemporaryDirectory() as tmp:
    crate = os.path.join(tmp, "crate")
    shutil.copytree(ws, crate, ignore=shutil.ignore_patterns("target", ".git"))
    with open(os.path.join(crate, "tests", "hidden.rs"), "w") as f:
        f.write(HIDDEN)
    proc = subprocess.run(["cargo", "test", "--offline", "-q"], cwd=crate, capture_output=True, text=True,
                          timeout=280, env=dict(os.environ, CARGO_TARGET_DIR=os.path.join(tmp, "target"),
                                                CARGO_TERM_COLOR="never"))
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        failed = [line for line in out.splitlines() if "panicked" in line or line.startswith("error")]
        sys.exit(f"cargo test fails: {(failed or [out[-300:]])[0][:300]}")
print("ok")
