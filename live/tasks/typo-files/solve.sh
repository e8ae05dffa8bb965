grep -rl -i recieve . | xargs sed -i 's/recieve/receive/g; s/Recieve/Receive/g'
