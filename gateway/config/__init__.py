"""The gateway's configuration: the TOML file's model (``model.py``), loading and checking it, the
environment's overrides (``env.py``) and Python objects named in it (``python_refs.py``).
"""
