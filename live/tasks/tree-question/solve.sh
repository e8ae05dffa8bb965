echo "$(find . -name '*.py' | wc -l) files, most in $(find . -name '*.py' | xargs -n1 dirname | sort | uniq -c | sort -rn | head -1 | awk '{print $2}' | sed 's|^\./||')"
