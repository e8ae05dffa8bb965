echo "$(find data -type f | wc -l) files, largest $(find data -type f -printf '%s %p\n' | sort -rn | head -1 | cut -d' ' -f2)"
