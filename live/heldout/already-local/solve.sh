grep -q '^bind = 127.0.0.1$' server.ini && echo "It already does: server.ini has bind = 127.0.0.1, so nothing needs to change."
