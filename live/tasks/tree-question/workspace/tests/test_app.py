"""tests/test_app.py"""
