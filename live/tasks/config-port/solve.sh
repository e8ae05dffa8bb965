sed -i '0,/^port = 8080$/s//port = 9090/' config.toml
