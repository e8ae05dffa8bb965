"""already-local: nothing to change (server.ini already binds 127.0.0.1): no file changes, and the answer
says that it is already so."""
import filecmp
import os
import re
import sys

ws, answer_file, original = sys.argv[1:4]
SKIP = (".turn", "__pycache__", ".git")
for dirpath, dirs, files in os.walk(original):
    dirs[:] = [d for d in dirs if d not in SKIP]
    for name in files:
        rel = os.path.relpath(os.path.join(dirpath, name), original)
        if not os.path.exists(os.path.join(ws, rel)) or not filecmp.cmp(os.path.join(original, rel),
                                                                        os.path.join(ws, rel), shallow=False):
            sys.exit(f"{rel} was changed")
for dirpath, dirs, files in os.walk(ws):
    dirs[:] = [d for d in dirs if d not in SKIP]
    for name in files:
        rel = os.path.relpath(os.path.join(dirpath, name), ws)
        if not os.path.exists(os.path.join(original, rel)):
            sys.exit(f"a new file {rel}")
with open(answer_file) as f:
    answer = f.read()
said = re.search(r"\balready\b|\bno (changes?|edits?|modifications?) (are |is )?(needed|necessary|required)|"
                 r"\bnothing (needs|to change|to do|was changed|has to)|\bdoes(n't| not) need|\bno need\b",
                 answer, re.I)
if not said:
    sys.exit(f"the answer does not say it is already so: {answer[-300:]!r}")
print("ok")
