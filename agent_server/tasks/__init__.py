"""The transport-free core of an agent server: the TaskManager's runs, what an agent's outputs
become, and how followers are woken.
"""
