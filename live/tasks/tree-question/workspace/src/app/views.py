"""src/app/views.py"""
