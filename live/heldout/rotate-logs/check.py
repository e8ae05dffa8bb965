"""rotate-logs: the script keeps the KEEP newest .log files, deletes the older ones, leaves other files."""
import os
import subprocess
import sys
import tempfile

ws = sys.argv[1]


def run(count, keep):
    with tempfile.TemporaryDirectory() as tmp:
        names = [f"app-{i:02d}.log" for i in range(count)]
        for i, name in enumerate(names):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(f"log {i}\n")
            os.utime(os.path.join(tmp, name), (1_700_000_000 + i * 60,) * 2)
        with open(os.path.join(tmp, "notes.txt"), "w") as f:
            f.write("keep me\n")
        args = ["sh", os.path.join(ws, "rotate_logs.sh"), tmp] + ([str(keep)] if keep != 3 else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30)
        left = sorted(os.listdir(tmp))
        want = sorted(names[-keep:] + ["notes.txt"]) if count > keep else sorted(names + ["notes.txt"])
        if proc.returncode != 0 or left != want:
            sys.exit(f"{count} logs, keep {keep}: exit {proc.returncode}, left {left}, want {want} {proc.stderr[-200:]}")


run(6, 3)
run(5, 1)
run(2, 3)
print("ok")
