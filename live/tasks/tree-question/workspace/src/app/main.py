"""src/app/main.py"""
