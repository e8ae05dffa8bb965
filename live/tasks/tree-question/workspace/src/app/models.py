"""src/app/models.py"""
