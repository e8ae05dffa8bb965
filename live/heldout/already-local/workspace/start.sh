#!/bin/sh
# Starts the status page with the settings in server.ini.
exec python3 -m status_page --config "$(dirname "$0")/server.ini"
