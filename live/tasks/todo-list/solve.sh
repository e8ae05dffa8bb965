grep -rn TODO src --include='*.py' | sed -E 's/^([^:]+:[0-9]+:).*(TODO.*)$/\1 \2/' > todo.txt
