#!/bin/sh
# Usage: rotate_logs.sh DIR [KEEP]
# Keeps the KEEP newest .log files in DIR (default 3) and deletes the older ones.
# Other files in DIR are left alone.
dir=${1:?usage: rotate_logs.sh DIR [KEEP]}
keep=${2:-3}
cd "$dir" || exit 1
ls -t -- *.log 2>/dev/null | head -n "$keep" | while read -r f; do
    rm -f -- "$f"
done
