"""src/lib/db.py"""
