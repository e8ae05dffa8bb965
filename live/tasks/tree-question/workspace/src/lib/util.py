"""src/lib/util.py"""
