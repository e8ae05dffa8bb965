"""add-flag: greet.py gains --shout (upper case); without it nothing changes."""
import subprocess
import sys

ws = sys.argv[1]
cases = [(["Ann"], "Hello, Ann!"), (["--shout", "Ann"], "HELLO, ANN!"), (["Bob", "--shout"], "HELLO, BOB!")]
for args, want in cases:
    proc = subprocess.run([sys.executable, "greet.py", *args], cwd=ws, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0 or proc.stdout.strip() != want:
        sys.exit(f"greet.py {' '.join(args)}: exit {proc.returncode}, {proc.stdout.strip()!r} (want {want!r}) "
                 f"{proc.stderr[-200:]}")
print("ok")
