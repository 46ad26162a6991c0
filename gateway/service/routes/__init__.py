"""The service's routes, one module per resource; ``app.py`` mounts them in order."""
