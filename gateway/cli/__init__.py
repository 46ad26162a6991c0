"""The ``switchboard`` command: ``main.py`` registers one module per subcommand; the rest is how
they show calls and runs.
"""
