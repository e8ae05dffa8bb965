sed -i 's/sorted\[mid\] + sorted\[mid + 1\]/sorted[mid - 1] + sorted[mid]/' src/lib.rs
