awk '$5 >= 500 && $5 < 600 {print $2}' access.log | sort | uniq -c | sort -rn | head -1 | awk '{print $2 ": " $1}'
