grep -rl load_cfg . | xargs sed -i 's/\bload_cfg\b/load_config/g'
