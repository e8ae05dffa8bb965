sed -i 's/UNITS = {"s": 1, "m": 60}/UNITS = {"s": 1, "m": 60, "h": 3600}/; s/(\[sm\])/([smh])/' durations.py
