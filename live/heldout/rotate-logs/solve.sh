sed -i 's/| head -n "\$keep" |/| tail -n +$((keep + 1)) |/' rotate_logs.sh
