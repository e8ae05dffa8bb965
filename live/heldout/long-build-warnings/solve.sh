python3 build.py | grep '^warning:' | cut -d' ' -f2
