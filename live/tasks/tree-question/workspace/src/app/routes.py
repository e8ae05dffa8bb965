"""src/app/routes.py"""
