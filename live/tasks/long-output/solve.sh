python3 run_checks.py | grep FAILED | cut -d' ' -f1
