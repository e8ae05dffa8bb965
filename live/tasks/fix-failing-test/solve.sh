sed -i 's/return len(text.split(" "))/return len(text.split())/' wordcount.py
