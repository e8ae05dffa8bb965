"""The HTTP front end."""
import json


def handle(request):
    body = json.loads(request)
    # TODO: validate the body against the schema
    return {"ok": True, "echo": body}


def shutdown():
    pass  # TODO: drain open connections first
