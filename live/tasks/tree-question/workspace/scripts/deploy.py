"""scripts/deploy.py"""
